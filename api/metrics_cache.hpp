// /metrics bodies: the snapshot's text rendered, and gzip-deflated, once per published snapshot.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "api/gzip_once.hpp"
#include "model/snapshot.hpp"

namespace rocewatch::api {

// A scrape then costs a copy plus a deflate of the small per-request tail (the HTTP
// counters), whatever the number of devices, and many scrapers cost no more work.
class MetricsCache {
   public:
    // The body for `snap` followed by `tail`: plain, or one gzip member when `gzip`.
    std::string body(const std::shared_ptr<const Snapshot>& snap, const std::string& tail, bool gzip);

   private:
    struct Entry {
        std::shared_ptr<const Snapshot> snap;
        std::shared_ptr<const std::string> text;
        std::shared_ptr<const DeflatedPrefix> deflated;  // made by the first gzip scrape
    };
    Entry entry_for(const std::shared_ptr<const Snapshot>& snap, bool gzip);

    std::mutex mu_;
    Entry cur_;
};

// Whether an Accept-Encoding value admits gzip (a "gzip" or "*" coding whose q is not 0).
bool accepts_gzip(const std::string& accept_encoding);

}  // namespace rocewatch::api
