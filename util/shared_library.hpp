// A shared library opened with dlopen, and its functions found by name: how the daemon uses
// OpenSSL (tls/openssl.hpp), libxcrypt (api/basic_auth.cpp) and liblldpctl
// (daemon/lldp/lldpctl_loader.hpp) without linking them. A library linked is mapped, relocated
// and partly resident in every daemon whether it is used or not (issue 14's memory goal).
#pragma once

#include <dlfcn.h>

#include <optional>
#include <string>

namespace rocewatch {

class SharedLibrary {
public:
    // Opens `soname` with RTLD_NODELETE, so that what find() fills stays good for the life of
    // the process. `missing` begins the error when it cannot be opened ("TLS needs OpenSSL 3
    // (Debian's libssl3)"); `built_for` names it when a function is not there ("the OpenSSL 3").
    SharedLibrary(std::string soname, const std::string& missing, std::string built_for)
        : soname_(std::move(soname)), built_for_(std::move(built_for)) {
        handle_ = ::dlopen(soname_.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (!handle_) {
            const char* why = ::dlerror();
            error_ = missing + ": " + (why ? why : "cannot load " + soname_);
        }
    }

    // Sets `f` to the library's function `name`, unless an earlier step failed.
    template <class F>
    void find(F& f, const char* name) {
        if (error_) return;
        if (void* sym = ::dlsym(handle_, name))
            f = reinterpret_cast<F>(sym);
        else
            error_ = soname_ + " has no " + name + ": not " + built_for_ + " this daemon was built for";
    }

    // nullopt while the library is open and every function asked for was found; else the first
    // problem.
    [[nodiscard]] const std::optional<std::string>& error() const { return error_; }

private:
    std::string soname_;
    std::string built_for_;
    void* handle_ = nullptr;
    std::optional<std::string> error_;
};

}  // namespace rocewatch
