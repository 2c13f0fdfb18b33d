// Names the calling thread as `top -H`, `ps -L`, gdb and /proc/PID/task/TID/comm show it.
#pragma once

#include <pthread.h>

#include <string>

namespace rocewatch {

// The kernel keeps 15 bytes; a longer name is cut there, never refused.
inline void name_this_thread(const std::string& name) {
    (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace rocewatch
