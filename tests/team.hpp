// Teams of threads standing in for MPI ranks: the exchanges of TessellationTeam and SolverTeam done through shared
// memory, so the team code paths are tested without mpirun (tests/cli/mpi.sh runs the real thing).
#pragma once
#include <barrier>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "parasurf/solver.hpp"
#include "parasurf/tessellate.hpp"

namespace parasurf::test {

class ThreadTeam {
 public:
  explicit ThreadTeam(int members)
      : members_(members), sync_(members), data_(std::size_t(members)), text_(std::size_t(members)) {}

  std::shared_ptr<const TessellationTeam> tessellation(int member) {
    auto t = std::make_shared<TessellationTeam>();
    t->member = member;
    t->members = members_;
    t->exchange = [this, member](void* data, std::size_t bytes, const std::vector<std::int64_t>& bounds, bool everyone) {
      data_[std::size_t(member)] = static_cast<char*>(data);
      sync_.arrive_and_wait();
      if (everyone || member == 0)
        for (int k = 0; k < members_; ++k) {
          const auto from = std::size_t(bounds[std::size_t(k)]), to = std::size_t(bounds[std::size_t(k) + 1]);
          if (k != member && to > from) std::memcpy(data_[std::size_t(member)] + from * bytes, data_[std::size_t(k)] + from * bytes, (to - from) * bytes);
        }
      sync_.arrive_and_wait();
    };
    return t;
  }

  std::shared_ptr<const SolverTeam> solver(int member) {
    auto t = std::make_shared<SolverTeam>();
    t->member = member;
    t->members = members_;
    t->all_gather = [this, member](const std::string& mine) {
      text_[std::size_t(member)] = mine;
      sync_.arrive_and_wait();
      std::vector<std::string> all = text_;
      sync_.arrive_and_wait();
      return all;
    };
    return t;
  }

  // Runs work(member) on one thread per member; rethrows the first failure.
  void run(const std::function<void(int)>& work) {
    std::vector<std::exception_ptr> failures(static_cast<std::size_t>(members_));
    std::vector<std::thread> threads;
    for (int k = 0; k < members_; ++k)
      threads.emplace_back([&, k] {
        try {
          work(k);
        } catch (...) {
          failures[std::size_t(k)] = std::current_exception();
          sync_.arrive_and_drop();  // the others' exchanges stop waiting for this member: a failure, not a hang
        }
      });
    for (auto& t : threads) t.join();
    for (auto& f : failures)
      if (f) std::rethrow_exception(f);
  }

 private:
  int members_;
  std::barrier<> sync_;
  std::vector<char*> data_;
  std::vector<std::string> text_;
};

}  // namespace parasurf::test
