// The arrays results come in (surface samples, meshes): std::vector with an allocator that leaves new elements
// uninitialised. The library writes every element of a result, so clearing a fresh array first (what resize does
// for std::vector<float>) would only be a second pass over it, on one thread, before the engine's threads or the
// GPU's copy fill it; for a large grid or mesh that pass took longer than the work. Large arrays are also offered
// to the system as transparent huge pages (a 512th of the page faults). Otherwise a HostVector is a std::vector:
// copy one into a std::vector with `std::vector<float>(v.begin(), v.end())`.
#pragma once
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace parasurf {

namespace detail {
void* allocate_result(std::size_t bytes);                 // throws std::bad_alloc
void free_result(void* p, std::size_t bytes) noexcept;    // bytes: as allocated
}  // namespace detail

template <class T>
struct UninitializedAllocator {
  static_assert(std::is_trivially_default_constructible_v<T>, "for plain values");
  using value_type = T;
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(detail::allocate_result(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { detail::free_result(p, n * sizeof(T)); }
  // Default construction leaves the value as it is; any other construction is the usual one.
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const UninitializedAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using HostVector = std::vector<T, UninitializedAllocator<T>>;

}  // namespace parasurf
