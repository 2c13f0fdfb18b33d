// The stop sequence names a step while it lasts and when it took long, and stays quiet
// for quick ones.
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <thread>

#include "daemon/core/shutdown_steps.hpp"

namespace rocewatch {
namespace {

using namespace std::chrono_literals;

TEST(ShutdownSteps, NamesASlowStepWhileItRunsAndAfter) {
    std::ostringstream out;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    spdlog::logger log("t", sink);
    std::vector<std::string> ran;
    {
        ShutdownSteps stop(log, 100ms);
        stop.step("quick", [&] { ran.push_back("quick"); });
        stop.step("the slow one", [&] {
            std::this_thread::sleep_for(450ms);
            ran.push_back("slow");
        });
        stop.step("after", [&] { ran.push_back("after"); });
    }
    EXPECT_EQ(ran, (std::vector<std::string>{"quick", "slow", "after"})) << "in order, each once";
    const std::string text = out.str();
    EXPECT_NE(text.find("shutdown: still stopping the slow one after"), std::string::npos) << text;
    EXPECT_NE(text.find("shutdown: stopping the slow one took"), std::string::npos) << text;
    EXPECT_EQ(text.find("quick"), std::string::npos) << text;
    EXPECT_EQ(text.find("after after"), std::string::npos) << text;
}

}  // namespace
}  // namespace rocewatch
