// The Alertmanager notifier's threads: watch snapshots, queue what is due, POST it.
#include "daemon/alertmanager/notifier.hpp"

#include <algorithm>
#include <set>

#include "http/client.hpp"
#include "http/resolve.hpp"
#include "util/base64.hpp"
#include "util/clock.hpp"
#include "util/http_url.hpp"
#include "util/log_safe.hpp"
#include "util/read_file.hpp"
#include "util/thread_name.hpp"

namespace rocewatch::alertmanager {
namespace {

// Prometheus' notifier sends at most 64 alerts per request, too.
constexpr size_t kMaxBatch = 64;
constexpr auto kWatchEvery = std::chrono::seconds(1);
// While an Alertmanager fails, everything is queued again this often: the next attempt that
// succeeds is the catch-up, without waiting out resend_interval.
constexpr auto kRetryEvery = std::chrono::seconds(5);
// Only an error's first words are kept from an answer.
constexpr size_t kMaxAnswer = 64 << 10;

// A credential file's content without the trailing newline editors add; nullopt with why if
// unreadable (or over 4 KiB: no token or password is that long).
std::optional<std::string> read_secret(const std::string& path, std::string& why) {
    auto file = read_small_file(path, 4096);
    if (!file.ok) {
        why = file.error;
        return std::nullopt;
    }
    std::string s = std::move(file.text);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

}  // namespace

Notifier::Notifier(const Config& config, NotifierDeps deps)
    : deps_(std::move(deps)), queue_(config.alertmanager.queue_capacity) {
    apply_config(config);
}

Notifier::~Notifier() { stop(); }

void Notifier::start() {
    std::lock_guard lock(mu_);
    wanted_ = true;
    start_threads_locked();
}

void Notifier::start_threads_locked() {
    // No Alertmanager, no threads: most nodes never name one, and each thread costs a stack and
    // a malloc cache (issue 14's memory). A reload that names one starts them.
    if (!wanted_ || targets_.empty() || watcher_.joinable() || stopping_) return;
    watcher_ = std::thread([this] {
        name_this_thread("am-watch");
        watch_loop();
    });
    sender_ = std::thread([this] {
        name_this_thread("am-send");
        send_loop();
    });
}

bool Notifier::running() const {
    std::lock_guard lock(mu_);
    return watcher_.joinable();
}

void Notifier::stop() {
    {
        std::lock_guard lock(wake_mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    queue_.close();
    std::thread watcher, sender;
    {
        std::lock_guard lock(mu_);
        watcher = std::move(watcher_);
        sender = std::move(sender_);
    }
    if (watcher.joinable()) watcher.join();
    if (sender.joinable()) sender.join();
}

void Notifier::apply_config(const Config& config) {
    auto c = std::make_shared<const Config>(config);
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<Target>> targets;
    for (const auto& url : c->alertmanager.urls) {
        auto same = std::ranges::find(targets_, url, &Target::url);
        if (same != targets_.end()) {
            targets.push_back(*same);  // counters carry on across a reload
        } else {
            auto t = std::make_shared<Target>();
            t->url = url;
            targets.push_back(std::move(t));
        }
    }
    targets_ = std::move(targets);
    queue_.set_capacity(c->alertmanager.queue_capacity);
    config_ = std::move(c);
    start_threads_locked();
}

std::shared_ptr<const Config> Notifier::config() const {
    std::lock_guard lock(mu_);
    return config_;
}

std::optional<AlertmanagerStats> Notifier::stats() const {
    std::lock_guard lock(mu_);
    if (targets_.empty()) return std::nullopt;
    AlertmanagerStats s;
    for (const auto& t : targets_) s.targets.push_back({.url = t->url, .sent = t->sent, .errors = t->errors});
    s.dropped = dropped_;
    s.queue_length = queue_.size();
    return s;
}

void Notifier::watch_loop() {
    for (;;) {
        {
            std::unique_lock lock(wake_mu_);
            if (wake_.wait_for(lock, kWatchEvery, [&] { return stopping_.load(); })) return;
        }
        auto c = config();
        auto snap = deps_.snapshots();
        if (c->alertmanager.urls.empty() || !snap) continue;
        const auto tick = SteadyClock::now();
        const std::string node = c->alertmanager.node.empty() ? snap->host.hostname : c->alertmanager.node;
        BookSettings s{.node = node,
                       .generator_base = generator_base(c->alertmanager, c->daemon.listen, node),
                       .resend_interval = c->alertmanager.resend_interval};
        const auto now = deps_.now();
        auto due = book_.step(snap->alerts, s, now);
        // Targets that failed get every alert again every kRetryEvery until one catch-up is
        // delivered; the others get only what is due (a dead target had the healthy ones sent
        // everything every 5 s).
        if (tick - last_retry_ >= kRetryEvery) {
            auto behind = std::make_shared<std::set<std::string>>();
            {
                std::lock_guard lock(mu_);
                for (const auto& t : targets_)
                    if (t->behind) behind->insert(t->url);
            }
            if (!behind->empty()) {
                last_retry_ = tick;
                for (auto& a : book_.all(s, now)) {
                    a.only_to = behind;
                    due.push_back(std::move(a));
                }
            }
        }
        if (due.empty()) continue;
        if (size_t dropped = queue_.push(std::move(due))) {
            dropped_ += dropped;
            deps_.log->warn("alertmanager: queue full, dropped the {} oldest alerts", dropped);
        }
    }
}

void Notifier::send_loop() {
    while (!stopping_) {
        auto batch = queue_.pop(kMaxBatch, std::chrono::seconds(1));
        if (batch.empty()) continue;
        const std::string body = payload_json(batch).dump();
        auto c = config();
        std::vector<std::shared_ptr<Target>> targets;
        {
            std::lock_guard lock(mu_);
            targets = targets_;
        }
        // A batch of catch-ups only goes to the targets they are for; one with any other alert
        // goes to every target.
        std::set<std::string> only_to;
        const bool catch_up = std::ranges::all_of(batch, [](const OutgoingAlert& a) { return a.only_to != nullptr; });
        if (catch_up)
            for (const auto& a : batch) only_to.insert(a.only_to->begin(), a.only_to->end());
        for (auto& t : targets) {
            if (stopping_) return;
            if (catch_up && !only_to.count(t->url)) continue;
            const bool was_behind = t->behind;
            send(*t, c->alertmanager, body, batch.size());
            // Caught up once a batch meant for it (a catch-up, which carries every alert) is in.
            if (!t->failing && was_behind && catch_up) t->behind = false;
            if (t->failing) t->behind = true;
        }
    }
}

void Notifier::send(Target& t, const AlertmanagerConfig& c, const std::string& body, size_t count) {
    // The timeout is the whole POST's, the name lookup included: an Alertmanager (or a proxy in
    // front of it) that trickled its answer held the notifier, and SIGTERM, for most of a minute.
    const auto deadline = std::chrono::steady_clock::now() + c.timeout;
    std::string error;
    std::string why;
    auto url = parse_http_url(t.url, why);  // checked when the config was loaded
    if (!url) error = why;
    http::Headers headers{{"Content-Type", "application/json"}};
    if (error.empty() && !c.bearer_token_file.empty()) {
        std::string why_not;
        if (auto token = read_secret(c.bearer_token_file, why_not))
            headers.emplace_back("Authorization", "Bearer " + *token);
        else
            error = "bearer_token_file " + c.bearer_token_file + ": " + why_not;
    }
    if (error.empty() && !c.basic_auth_username.empty()) {
        std::string why_not;
        if (auto password = read_secret(c.basic_auth_password_file, why_not))
            headers.emplace_back("Authorization", "Basic " + base64_encode(c.basic_auth_username + ":" + *password));
        else
            error = "basic_auth_password_file " + c.basic_auth_password_file + ": " + why_not;
    }
    std::optional<std::string> address;
    if (error.empty() && !(address = http::resolve_host(url->host, deadline, why))) error = why;
    if (error.empty()) {
        http::Request rq;
        rq.address = *address;
        rq.port = url->port;
        rq.host = url->host;
        rq.method = "POST";
        rq.target = url->path + "/api/v2/alerts";
        rq.headers = std::move(headers);
        rq.body = body;
        rq.deadline = deadline;
        rq.connect_timeout = c.timeout;
        rq.cancel = &stopping_;  // stop() ends a POST in flight
        rq.max_body = kMaxAnswer;
        rq.tls = {.enabled = url->https, .ca_file = c.ca_file, .cert_file = c.cert_file, .key_file = c.key_file};
        const auto res = http::fetch(rq);
        const bool late = res.error == http::Error::timeout || res.error == http::Error::connect_timeout;
        if (late)
            error = "no answer within the timeout (" + std::to_string(c.timeout.count()) + " ms)";
        else if (res.error == http::Error::too_large)
            error = "an answer over 64 KiB: " + log_safe(res.body, 200);
        else if (!res.ok())
            error = res.error == http::Error::cancelled ? "cancelled: the daemon is stopping" : res.detail;
        else if (res.status < 200 || res.status > 299)
            error = "HTTP " + std::to_string(res.status) + ": " + log_safe(res.body, 200);
    }
    if (error.empty()) {
        t.sent += count;
        if (t.failing) deps_.log->info("alertmanager {}: reachable again; every alert goes to it again", t.url);
        t.failing = false;
        return;
    }
    t.errors += count;
    if (!t.failing) deps_.log->warn("alertmanager {}: {} alerts not delivered: {}", t.url, count, error);
    deps_.log->debug("alertmanager {}: {} alerts not delivered: {}", t.url, count, error);
    t.failing = true;
}

}  // namespace rocewatch::alertmanager
