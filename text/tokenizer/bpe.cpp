#include "text/tokenizer/bpe.hpp"

#include <algorithm>
#include <functional>

#include "base/utf8.hpp"
#include "text/tokenizer/byte_level.hpp"
#include "text/tokenizer/json_fields.hpp"

namespace troupe {
namespace {

using json = nlohmann::json;

// An empty string and null both mean "none" for these optional string settings.
bool unset(const json& model, const char* key) {
  const auto it = model.find(key);
  return it == model.end() || it->is_null() || (it->is_string() && it->get_ref<const std::string&>().empty());
}

}  // namespace

result<bpe> bpe::from_json(const json& model, std::string_view source) {
  const auto bad = [&](const std::string& what) { return error{std::string(source) + ": " + what}; };
  if (!model.is_object()) return bad("\"model\" must be an object");
  const std::string type = string_field(model, "type", model.contains("merges") ? "BPE" : "");
  if (type != "BPE") return bad("unsupported model type \"" + type + "\" (only byte-level BPE is supported)");
  if (const auto d = model.find("dropout");
      d != model.end() && !d->is_null() && !(d->is_number() && d->get<double>() == 0.0))
    return bad("unsupported BPE setting \"dropout\"");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!unset(model, key)) return bad(std::string("unsupported BPE setting \"") + key + "\"");

  bpe b;
  b.ignore_merges_ = bool_field(model, "ignore_merges", false);

  const auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) return bad("BPE model without a \"vocab\" object");
  b.vocab_.reserve(vocab->size());
  // Ids are dense, as Hugging Face tokenizers counts them (added tokens follow the
  // vocab's size): an id past it would also size the id table by a stranger's number.
  b.tokens_.resize(vocab->size());
  for (const auto& [text, id] : vocab->items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= int64_t(vocab->size()))
      return bad("vocab entry \"" + text + "\" has no valid id (the vocab's " + std::to_string(vocab->size()) +
                 " entries have ids 0 to " + std::to_string(vocab->size() - 1) + ")");
    const int i = id.get<int>();
    b.vocab_.emplace(text, i);
    b.tokens_[size_t(i)] = text;
    if (auto bytes = byte_level_decode(text)) b.vocab_by_bytes_.emplace(std::move(*bytes), i);
  }
  for (int byte = 0; byte < 256; ++byte) {
    std::string one;
    append_utf8(byte_level_char(uint8_t(byte)), one);
    const auto it = b.vocab_.find(one);
    if (it == b.vocab_.end())
      return bad("the vocab lacks byte 0x" + std::string(1, "0123456789abcdef"[byte >> 4]) +
                 "0123456789abcdef"[byte & 15] + ": not a byte-level BPE vocabulary");
    b.byte_ids_[size_t(byte)] = it->second;
  }

  const auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) return bad("BPE model without a \"merges\" list");
  b.merges_.reserve(merges->size());
  int rank = 0;
  for (const json& m : *merges) {
    // "left right" in older files, ["left", "right"] since tokenizers 0.20.
    std::string left, right;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        return bad("merge \"" + s + "\" is not two tokens separated by a space");
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      return bad("merge " + m.dump() + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    const auto l = b.vocab_.find(left), r = b.vocab_.find(right), merged = b.vocab_.find(left + right);
    if (l == b.vocab_.end() || r == b.vocab_.end() || merged == b.vocab_.end())
      return bad("merge \"" + left + " " + right + "\" uses a token missing from the vocab");
    b.merges_[pair_key(l->second, r->second)] = {rank++, merged->second};  // a repeat ranks last
  }
  return b;
}

std::optional<int> bpe::id_of(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void bpe::encode(std::string_view piece, std::vector<int>& ids) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (const auto it = vocab_by_bytes_.find(piece); it != vocab_by_bytes_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  if (piece.size() == 1) {
    ids.push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
    return;
  }

  // Symbols in a linked list over an array; a merge folds the right symbol into the left.
  // The candidate merges wait in a min-heap by (rank, position). Both buffers are reused
  // across calls on a thread.
  struct symbol {
    int id;
    int prev;
    int next;  // -1 at either end
  };
  struct candidate {
    int rank;
    int pos;
    int left;
    int right;
    int merged;
    bool operator>(const candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  thread_local std::vector<symbol> symbols;
  thread_local std::vector<candidate> queue;
  symbols.resize(piece.size());
  queue.clear();
  for (size_t i = 0; i < piece.size(); ++i)
    symbols[i] = {byte_ids_[static_cast<unsigned char>(piece[i])], int(i) - 1, i + 1 < piece.size() ? int(i) + 1 : -1};
  const auto consider = [&](int pos) {
    if (pos < 0 || symbols[size_t(pos)].next < 0) return;
    const int left = symbols[size_t(pos)].id, right = symbols[size_t(symbols[size_t(pos)].next)].id;
    if (const auto it = merges_.find(pair_key(left, right)); it != merges_.end()) {
      queue.push_back({it->second.rank, pos, left, right, it->second.merged_id});
      std::push_heap(queue.begin(), queue.end(), std::greater<>());
    }
  };
  for (int i = 0; i + 1 < int(piece.size()); ++i) consider(i);

  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), std::greater<>());
    const candidate c = queue.back();
    queue.pop_back();
    symbol& s = symbols[size_t(c.pos)];
    // Stale when either side has merged since: the pair differs, or the symbol is gone.
    if (s.id != c.left || s.next < 0 || symbols[size_t(s.next)].id != c.right) continue;
    symbol& gone = symbols[size_t(s.next)];
    s.id = c.merged;
    s.next = gone.next;
    if (gone.next >= 0) symbols[size_t(gone.next)].prev = c.pos;
    gone.id = -1;
    consider(s.prev);
    consider(c.pos);
  }
  for (int i = 0; i >= 0; i = symbols[size_t(i)].next) ids.push_back(symbols[size_t(i)].id);
  if (piece.size() > 4096) {  // keep no huge buffers for the thread's lifetime
    symbols = {};
    queue = {};
  }
}

}  // namespace troupe
