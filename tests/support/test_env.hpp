// Shared test helpers: where fixtures live, and the rule for tests that need root.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace rocewatch::testing {

// Set by meson for every test: the source tree's tests/fixtures directory.
inline std::string fixtures_dir() {
    const char* d = std::getenv("ROCEWATCH_FIXTURES");
    return d ? d : "tests/fixtures";
}

inline bool in_ci() {
    const char* ci = std::getenv("CI");
    return ci && *ci && std::string(ci) != "0" && std::string(ci) != "false";
}

}  // namespace rocewatch::testing

// Tests that need root (network namespaces, veth) may skip outside CI, saying why;
// in CI a missing privilege is a failure, never a silent pass.
#define ROCEWATCH_REQUIRE_ROOT()                                                                     \
    do {                                                                                             \
        if (::geteuid() != 0) {                                                                      \
            if (::rocewatch::testing::in_ci()) FAIL() << "this test needs root, and CI must run it"; \
            GTEST_SKIP() << "needs root (network namespaces); runs in CI";                           \
        }                                                                                            \
    } while (0)
