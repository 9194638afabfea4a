#include "text/jinja/lexer.hpp"

#include <charconv>
#include <cstdlib>

#include "text/jinja/utf8.hpp"

namespace troupe::jinja {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
int count_lines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class lexer {
 public:
  explicit lexer(std::string src) : src_(std::move(src)) {}

  result<std::vector<token>> run() {
    while (pos_ < src_.size()) {
      const std::size_t start = next_tag(pos_);
      if (start == std::string::npos) {
        emit_text(src_.substr(pos_), src_.size() - pos_);
        break;
      }
      const char kind = src_[start + 1];
      const char modifier = start + 2 < src_.size() ? src_[start + 2] : '\0';
      std::string text = src_.substr(pos_, start - pos_);
      const std::size_t raw_length = text.size();
      if (modifier == '-') {
        text.erase(text.find_last_not_of(" \t\n\r\f\v") + 1);
      } else if (kind != '{' && modifier != '+') {
        // lstrip_blocks: drop the indentation in front of a block or comment tag.
        const std::size_t line_pos = text.rfind('\n') + 1;
        const bool line_starting = pos_ == 0 || src_[pos_ - 1] == '\n';
        if ((line_pos > 0 || line_starting) && text.find_first_not_of(" \t", line_pos) == std::string::npos)
          text.erase(line_pos);
      }
      emit_text(std::move(text), raw_length);
      pos_ = start + 2 + (modifier == '-' || modifier == '+');
      if (status s = kind == '#' ? comment() : tag(kind); !s) return s.err();
    }
    tokens_.push_back({token::kind::end, "", 0, 0, line_});
    return std::move(tokens_);
  }

 private:
  std::size_t next_tag(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return std::string::npos;
  }

  void emit_text(std::string text, std::size_t raw_length) {
    const int line = line_;
    line_ += count_lines(std::string_view(src_).substr(pos_, raw_length));
    if (!text.empty()) tokens_.push_back({token::kind::text, std::move(text), 0, 0, line});
  }

  // After a tag: `-` eats all following whitespace; trim_blocks eats one newline after a
  // block or comment tag unless it ends in `+`.
  void after_tag(char right_modifier, bool is_block) {
    if (right_modifier == '-') {
      while (pos_ < src_.size() && is_ws(src_[pos_])) line_ += src_[pos_++] == '\n';
    } else if (is_block && right_modifier != '+' && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
    }
  }

  status comment() {
    const std::size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) return error{"line " + std::to_string(line_) + ": unclosed comment '{#'"};
    const char right = end > pos_ ? src_[end - 1] : '\0';
    line_ += count_lines(std::string_view(src_).substr(pos_, end - pos_));
    pos_ = end + 2;
    after_tag(right == '-' || right == '+' ? right : '\0', true);
    return ok();
  }

  status tag(char kind) {
    const int open_line = line_;
    const bool is_print = kind == '{';
    tokens_.push_back({is_print ? token::kind::print_begin : token::kind::block_begin, "", 0, 0, line_});
    int brace_depth = 0;
    for (;;) {
      while (pos_ < src_.size() && is_ws(src_[pos_])) line_ += src_[pos_++] == '\n';
      if (pos_ >= src_.size())
        return error{"line " + std::to_string(open_line) + ": unclosed '" + (is_print ? "{{" : "{%") + "' tag"};
      const std::string_view rest = std::string_view(src_).substr(pos_);
      const std::string_view close = is_print ? "}}" : "%}";
      char right = '\0';
      if ((rest[0] == '-' || (!is_print && rest[0] == '+')) && rest.substr(1, 2) == close) right = rest[0];
      if (right || (rest.substr(0, 2) == close && (!is_print || brace_depth == 0))) {
        tokens_.push_back({is_print ? token::kind::print_end : token::kind::block_end, "", 0, 0, line_});
        pos_ += 2 + (right != '\0');
        after_tag(right, !is_print);
        return ok();
      }
      const char c = rest[0];
      if (c == '\'' || c == '"') {
        if (status s = string_literal(c); !s) return s;
      } else if (is_digit(c)) {
        if (status s = number(); !s) return s;
      } else if (is_name_start(c)) {
        std::size_t end = pos_;
        while (end < src_.size() && is_name_char(src_[end])) ++end;
        tokens_.push_back({token::kind::name, src_.substr(pos_, end - pos_), 0, 0, line_});
        pos_ = end;
      } else if (status s = op(brace_depth); !s) {
        return s;
      }
    }
  }

  status op(int& brace_depth) {
    static constexpr std::string_view two[] = {"//", "**", "==", "!=", "<=", ">="};
    for (std::string_view o : two) {
      if (std::string_view(src_).substr(pos_, 2) == o) {
        tokens_.push_back({token::kind::op, std::string(o), 0, 0, line_});
        pos_ += 2;
        return ok();
      }
    }
    const char c = src_[pos_];
    if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos)
      return error{"line " + std::to_string(line_) + ": unexpected character '" + std::string(1, c) + "'"};
    brace_depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    tokens_.push_back({token::kind::op, std::string(1, c), 0, 0, line_});
    ++pos_;
    return ok();
  }

  status number() {
    const bool after_dot = !tokens_.empty() && tokens_.back().type == token::kind::op && tokens_.back().text == ".";
    std::string digits;
    bool is_float = false;
    auto take_digits = [&] {
      while (pos_ < src_.size() &&
             (is_digit(src_[pos_]) || (src_[pos_] == '_' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]))))
        if (src_[pos_++] != '_') digits += src_[pos_ - 1];
    };
    take_digits();
    if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
      digits += src_[pos_++];
      take_digits();
      is_float = true;
    }
    if (!after_dot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      std::size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && is_digit(src_[p])) {
        digits += 'e';
        digits += src_.substr(pos_ + 1, p - pos_ - 1);
        pos_ = p;
        take_digits();
        is_float = true;
      }
    }
    token t{is_float ? token::kind::floating : token::kind::integer, digits, 0, 0, line_};
    if (is_float) {
      t.floating = std::strtod(digits.c_str(), nullptr);
    } else if (std::from_chars(digits.data(), digits.data() + digits.size(), t.integer).ec != std::errc()) {
      return error{"line " + std::to_string(line_) + ": integer literal " + digits + " is too large"};
    }
    tokens_.push_back(std::move(t));
    return ok();
  }

  // Python string literal escapes, as jinja2 decodes them ("unicode-escape").
  status string_literal(char quote) {
    const int line = line_;
    std::string value;
    ++pos_;
    for (;;) {
      if (pos_ >= src_.size()) return error{"line " + std::to_string(line) + ": unterminated string literal"};
      const char c = src_[pos_++];
      if (c == quote) break;
      line_ += c == '\n';
      if (c != '\\' || pos_ >= src_.size()) {
        value += c;
        continue;
      }
      const char e = src_[pos_++];
      switch (e) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'v':
          value += '\v';
          break;
        case 'a':
          value += '\a';
          break;
        case '\\':
        case '\'':
        case '"':
          value += e;
          break;
        case '\n':
          ++line_;
          break;
        case 'x':
        case 'u':
        case 'U': {
          const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          std::uint32_t cp = 0;
          const char* first = src_.data() + pos_;
          if (pos_ + n > src_.size() || std::from_chars(first, first + n, cp, 16).ptr != first + n || cp > 0x10FFFF)
            return error{"line " + std::to_string(line_) + ": bad \\" + std::string(1, e) +
                         " escape in string literal"};
          utf8::append(value, cp);
          pos_ += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            std::uint32_t cp = e - '0';
            for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k)
              cp = cp * 8 + (src_[pos_++] - '0');
            utf8::append(value, cp);
          } else {
            value += '\\';  // Python keeps unknown escapes as written
            value += e;
          }
      }
    }
    tokens_.push_back({token::kind::string, std::move(value), 0, 0, line});
    return ok();
  }

  std::string src_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::vector<token> tokens_;
};

}  // namespace

result<std::vector<token>> tokenize(std::string_view source) { return lexer(normalize_newlines(source)).run(); }

}  // namespace troupe::jinja
