#pragma once
// One level of a recursive walk over a template, counted in `depth` for as long as it lives:
// the parser and the renderer bound their recursion with it.
namespace troupe::jinja {

class nesting_level {
 public:
  explicit nesting_level(int& depth) : depth_(depth) { ++depth_; }
  ~nesting_level() { --depth_; }
  nesting_level(const nesting_level&) = delete;
  nesting_level& operator=(const nesting_level&) = delete;
  bool deeper_than(int limit) const { return depth_ > limit; }

 private:
  int& depth_;
};

}  // namespace troupe::jinja
