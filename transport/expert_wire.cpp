#include "transport/expert_wire.hpp"

#include <bit>
#include <cstring>

namespace troupe {
namespace {

// The arrays travel as the memory that holds them; the header is written byte by byte.
static_assert(std::endian::native == std::endian::little, "expert_wire sends arrays in host byte order");
static_assert(sizeof(int) == 4 && sizeof(float) == 4);

constexpr uint32_t request_magic = 0x31'71'64'74;  // "tdq1" in little-endian bytes
constexpr uint32_t reply_magic = 0x31'72'64'74;    // "tdr1"
constexpr uint32_t reply_ok = 0, reply_error = 1;
constexpr size_t request_header_bytes = 28, reply_header_bytes = 16;

class writer {
 public:
  explicit writer(size_t bytes) { bytes_.reserve(bytes); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_.push_back(uint8_t(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes_.push_back(uint8_t(v >> (8 * i)));
  }
  void raw(const void* data, size_t n) {
    const auto* first = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), first, first + n);
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

// Reads that fail, taking nothing, when fewer bytes are left than they need.
class reader {
 public:
  explicit reader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  size_t left() const { return bytes_.size() - at_; }
  bool u32(uint32_t& v) {
    if (left() < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(bytes_[at_++]) << (8 * i);
    return true;
  }
  bool u64(uint64_t& v) {
    if (left() < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(bytes_[at_++]) << (8 * i);
    return true;
  }
  template <class T>
  bool array(uint64_t n, std::vector<T>& v) {
    if (n > left() / sizeof(T)) return false;
    v.resize(size_t(n));
    if (n > 0) std::memcpy(v.data(), bytes_.data() + at_, size_t(n) * sizeof(T));
    at_ += size_t(n) * sizeof(T);
    return true;
  }

 private:
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
};

error malformed(const char* what, const std::string& why) { return {std::string("malformed ") + what + ": " + why}; }

std::string describe(const dispatch_header& h) {
  return "layer " + std::to_string(h.layer) + ", experts [" + std::to_string(h.first_expert) + ", " +
         std::to_string(h.last_expert) + "), tokens " + std::to_string(h.tokens) + ", k " + std::to_string(h.k) +
         ", hidden " + std::to_string(h.hidden);
}

}  // namespace

std::vector<uint8_t> encode_request(const dispatch_header& h, const float* x, const int* chosen, const float* weights) {
  const size_t rows = size_t(h.tokens) * size_t(h.hidden), routed = size_t(h.tokens) * size_t(h.k);
  writer w(request_header_bytes + 4 * (rows + 2 * routed));
  w.u32(request_magic);
  for (int field : {h.layer, h.first_expert, h.last_expert, h.tokens, h.k, h.hidden}) w.u32(uint32_t(field));
  w.raw(x, 4 * rows);
  w.raw(chosen, 4 * routed);
  w.raw(weights, 4 * routed);
  return w.take();
}

result<dispatch_request> decode_request(const std::vector<uint8_t>& bytes) {
  constexpr const char* what = "dispatch request";
  reader r(bytes);
  uint32_t magic = 0, fields[6] = {};
  if (!r.u32(magic)) return malformed(what, std::to_string(bytes.size()) + " bytes, shorter than its header");
  if (magic != request_magic) return malformed(what, "it does not start as one");
  for (uint32_t& f : fields)
    if (!r.u32(f)) return malformed(what, std::to_string(bytes.size()) + " bytes, shorter than its header");
  dispatch_request q;
  dispatch_header& h = q.header;
  h = {int(fields[0]), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[4]), int(fields[5])};
  if (h.layer < 0 || h.first_expert < 0 || h.first_expert >= h.last_expert || h.tokens < 0 || h.k < 1 || h.hidden < 1)
    return malformed(what, "impossible header (" + describe(h) + ")");
  // Each product is below 2^62: no overflow.
  const uint64_t rows = uint64_t(h.tokens) * uint64_t(h.hidden), routed = uint64_t(h.tokens) * uint64_t(h.k);
  if (!r.array(rows, q.x) || !r.array(routed, q.chosen) || !r.array(routed, q.weights))
    return malformed(what, std::to_string(bytes.size()) + " bytes, too few for its arrays (" + describe(h) + ")");
  if (r.left() != 0) return malformed(what, std::to_string(r.left()) + " bytes past its arrays");
  for (int e : q.chosen)
    if (e < 0) return malformed(what, "chosen expert " + std::to_string(e));
  return q;
}

std::vector<uint8_t> encode_reply(const float* out, size_t count) {
  writer w(reply_header_bytes + 4 * count);
  w.u32(reply_magic);
  w.u32(reply_ok);
  w.u64(count);
  w.raw(out, 4 * count);
  return w.take();
}

std::vector<uint8_t> encode_error_reply(const std::string& message) {
  writer w(reply_header_bytes + message.size());
  w.u32(reply_magic);
  w.u32(reply_error);
  w.u64(message.size());
  w.raw(message.data(), message.size());
  return w.take();
}

status decode_reply(const std::vector<uint8_t>& bytes, float* out, size_t count) {
  constexpr const char* what = "expert reply";
  reader r(bytes);
  uint32_t magic = 0, kind = 0;
  uint64_t n = 0;
  if (!r.u32(magic) || !r.u32(kind) || !r.u64(n))
    return malformed(what, std::to_string(bytes.size()) + " bytes, shorter than its header");
  if (magic != reply_magic) return malformed(what, "it does not start as one");
  if (kind == reply_error) {
    if (n != r.left())
      return malformed(what, "an error of " + std::to_string(n) + " bytes in " + std::to_string(r.left()));
    return error{std::string(bytes.begin() + reply_header_bytes, bytes.end())};
  }
  if (kind != reply_ok) return malformed(what, "unknown kind " + std::to_string(kind));
  if (n != count) return malformed(what, std::to_string(n) + " floats where " + std::to_string(count) + " were asked");
  if (n > r.left() / 4 || r.left() != 4 * n)
    return malformed(what, std::to_string(r.left()) + " bytes for " + std::to_string(n) + " floats");
  if (n > 0) std::memcpy(out, bytes.data() + reply_header_bytes, 4 * n);
  return ok();
}

}  // namespace troupe
