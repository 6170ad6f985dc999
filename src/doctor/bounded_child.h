// Test helper for doctor's hostile-input tests: a check run in a child process under RLIMIT_AS and a
// hang guard (base/child_limit.h), its findings handed back as text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/child_limit.h"

namespace edgedecode::doctor::testing {

using testing_util::ChildResult;
inline constexpr uint64_t kTestAddressSpace = testing_util::kTestMemoryLimit;  // 1 GiB, as the Release rule says

inline bool AddressSpaceLimitApplies() { return testing_util::MemoryLimitApplies(); }

// fn's text comes back in ChildResult::out; ok() when it returned normally.
inline ChildResult RunBounded(const std::function<std::string()>& fn, uint64_t address_space = kTestAddressSpace,
                              unsigned hang_guard_s = 300) {
  return testing_util::RunInChild([&](std::string* out) { *out = fn(); return 0; }, address_space, hang_guard_s);
}

}  // namespace edgedecode::doctor::testing
