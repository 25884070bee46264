// The bricks a profiler knows: ids, names and categories, given by the caller at construction.
// The profiler knows nothing about the computation; this table is all it learns.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rh::bricks {

// Index into the brick table. Callers usually cast their own enum to it; a dense id is what makes
// the hot path an array access with no hashing.
using BrickId = std::uint16_t;

enum class Category : std::uint8_t { data, elementwise, blas2, blas3, factor };
inline constexpr std::size_t kCategoryCount = 5;

std::string_view to_string(Category c) noexcept;
// Throws std::invalid_argument naming the accepted spellings.
Category category_from_string(std::string_view name);

struct BrickInfo {
  BrickId id;
  std::string name;
  Category category;
};

// The known bricks (ids 0..n-1, in order) followed by bricks interned by name at run time. Interning
// allocates and takes the profiler's lock, so it is the slow path; ids stay stable once issued.
class BrickTable {
 public:
  // Known bricks must be listed with ids 0, 1, 2, ... and distinct names; anything else throws
  // std::invalid_argument, because a gap or a duplicate would silently merge two bricks' counters.
  BrickTable(std::initializer_list<BrickInfo> known, std::size_t capacity);
  BrickTable(std::vector<BrickInfo> known, std::size_t capacity);

  std::size_t size() const noexcept { return bricks_.size(); }
  std::size_t known_count() const noexcept { return known_count_; }
  std::size_t capacity() const noexcept { return capacity_; }
  const BrickInfo& operator[](BrickId id) const { return bricks_[id]; }
  const std::vector<BrickInfo>& all() const noexcept { return bricks_; }

  std::optional<BrickId> find(std::string_view name) const noexcept;
  // Returns the id of `name`, adding it when new. Throws std::length_error once `capacity` bricks
  // exist: per-thread counters are sized once, so growth past it would need a hot-path allocation.
  BrickId intern(std::string_view name, Category category);

 private:
  std::vector<BrickInfo> bricks_;
  std::size_t known_count_;
  std::size_t capacity_;
};

}  // namespace rh::bricks
