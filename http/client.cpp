// One HTTP/1.1 request a connection: a non-blocking socket polled against the deadline, and
// OpenSSL over memory BIOs when TLS is asked for, so that every byte, plain or TLS, goes
// through the same bounded waits (and send's MSG_NOSIGNAL: no SIGPIPE in any process).
#include "http/client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>

#include "util/fd.hpp"
#include "util/host_port.hpp"
#include "util/http_text.hpp"
#include "http/resolve.hpp"
#include "tls/openssl.hpp"

namespace rocewatch::http {

RW_USING_OPENSSL
namespace {

using Clock = std::chrono::steady_clock;

// How often a wait looks at the cancel flag.
constexpr auto kCancelSlice = std::chrono::milliseconds(100);
// The status line and headers of one answer (and a chunked body's size lines and trailers):
// past this, whatever answers is not an HTTP server we want to hear more from.
constexpr size_t kMaxHead = 64 << 10;
constexpr size_t kReadChunk = 16 << 10;

struct SslCtxFree {
    void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
struct SslFree {
    void operator()(SSL* s) const { SSL_free(s); }
};

// One exchange: the connection, its deadline and cancel flag, and the first error, which ends it.
class Exchange {
public:
    Exchange(const Request& rq, Response& res) : rq_(rq), res_(res), host_(rq.host.empty() ? rq.address : rq.host) {
        if (host_.size() >= 2 && host_.front() == '[' && host_.back() == ']') host_ = host_.substr(1, host_.size() - 2);
    }

    void run() {
        if (!connect() || (rq_.tls.enabled && !handshake())) return;
        phase_ = "while sending the request";
        std::string head;
        if (!request_head(head) || !send_all(head + rq_.body)) return;
        phase_ = "while reading the answer";
        read_answer();
    }

private:
    enum class Wait { ready, expired, cancelled, failed };

    bool fail(Error e, std::string detail) {
        if (res_.error == Error::none) {
            res_.error = e;
            res_.detail = std::move(detail);
        }
        return false;
    }

    // Waits for `events` until `until`, in slices when there is a cancel flag to look at.
    Wait wait(short events, Clock::time_point until) {
        for (;;) {
            if (rq_.cancel && rq_.cancel->load()) return Wait::cancelled;
            const auto now = Clock::now();
            if (now >= until) return Wait::expired;
            auto left = until - now;
            if (rq_.cancel) left = std::min<Clock::duration>(left, kCancelSlice);
            const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
            pollfd p{.fd = fd_.get(), .events = events, .revents = 0};
            const int rc = ::poll(&p, 1, static_cast<int>(ms));
            if (rc > 0) return Wait::ready;  // POLLERR and POLLHUP too: the call that follows says what
            if (rc < 0 && errno != EINTR) {
                poll_errno_ = errno;
                return Wait::failed;
            }
        }
    }

    // Wait::ready or the failure recorded.
    bool wait_or_fail(short events) {
        switch (wait(events, rq_.deadline)) {
            case Wait::ready: return true;
            case Wait::expired: return fail(Error::timeout, std::string("the deadline passed ") + phase_);
            case Wait::cancelled: return fail(Error::cancelled, "cancelled");
            case Wait::failed: break;
        }
        return fail(Error::closed, std::string("poll: ") + std::strerror(poll_errno_));
    }

    bool connect() {
        std::string bare = rq_.address;
        if (bare.size() >= 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
        sockaddr_storage sa{};
        socklen_t len = 0;
        auto* v4 = reinterpret_cast<sockaddr_in*>(&sa);
        auto* v6 = reinterpret_cast<sockaddr_in6*>(&sa);
        if (inet_pton(AF_INET, bare.c_str(), &v4->sin_addr) == 1) {
            v4->sin_family = AF_INET;
            v4->sin_port = htons(rq_.port);
            len = sizeof *v4;
        } else if (inet_pton(AF_INET6, bare.c_str(), &v6->sin6_addr) == 1) {
            v6->sin6_family = AF_INET6;
            v6->sin6_port = htons(rq_.port);
            len = sizeof *v6;
        } else {
            return fail(Error::refused, "not a numeric address: " + rq_.address);
        }
        const std::string where = host_port(bare, rq_.port);
        if (rq_.cancel && rq_.cancel->load()) return fail(Error::cancelled, "cancelled");
        if (Clock::now() >= rq_.deadline) return fail(Error::timeout, "the deadline passed before the connect");
        fd_.reset(::socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!fd_) return fail(Error::refused, std::string("socket: ") + std::strerror(errno));
        if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&sa), len) != 0) {
            if (errno != EINPROGRESS) return fail(Error::refused, "connect to " + where + ": " + std::strerror(errno));
            const auto start = Clock::now();
            const auto by = std::min(rq_.deadline, start + rq_.connect_timeout);
            switch (wait(POLLOUT, by)) {
                case Wait::ready: break;
                case Wait::cancelled: return fail(Error::cancelled, "cancelled");
                case Wait::expired:
                    return fail(Error::connect_timeout,
                                "no connection to " + where + " within " +
                                    std::to_string(
                                        std::chrono::duration_cast<std::chrono::milliseconds>(by - start).count()) +
                                    " ms");
                case Wait::failed: return fail(Error::refused, std::string("poll: ") + std::strerror(poll_errno_));
            }
            int err = 0;
            socklen_t elen = sizeof err;
            if (::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &elen) != 0) err = errno;
            if (err != 0) return fail(Error::refused, "connect to " + where + ": " + std::strerror(err));
        }
        return true;
    }

    // ---- the socket, below TLS

    bool raw_send(const char* p, size_t n) {
        while (n > 0) {
            const ssize_t k = ::send(fd_.get(), p, n, MSG_NOSIGNAL);
            if (k > 0) {
                p += k;
                n -= static_cast<size_t>(k);
            } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (!wait_or_fail(POLLOUT)) return false;
            } else if (k < 0 && errno != EINTR) {
                return fail(Error::closed, std::string("the peer closed the connection ") + phase_ + " (" +
                                               std::strerror(errno) + ")");
            }
        }
        return true;
    }

    // Bytes read (> 0), 0 at the peer's end of stream, -1 with the failure recorded.
    ssize_t raw_recv(char* buf, size_t n) {
        for (;;) {
            const ssize_t k = ::recv(fd_.get(), buf, n, 0);
            if (k >= 0) return k;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!wait_or_fail(POLLIN)) return -1;
            } else if (errno != EINTR) {
                fail(Error::closed,
                     std::string("the peer closed the connection ") + phase_ + " (" + std::strerror(errno) + ")");
                return -1;
            }
        }
    }

    // ---- TLS over memory BIOs: OpenSSL never touches the socket

    bool handshake() {
        phase_ = "during the TLS handshake";
        if (auto why = tls::load_openssl()) return fail(Error::tls, *why);
        ERR_clear_error();
        ctx_.reset(SSL_CTX_new(TLS_client_method()));
        if (!ctx_) return fail(Error::tls, "TLS: " + tls::openssl_errors("cannot make a context"));
        SSL_CTX_set_min_proto_version(ctx_.get(), TLS1_2_VERSION);
        SSL_CTX_set_verify(ctx_.get(), SSL_VERIFY_PEER, nullptr);
        const bool cas = rq_.tls.ca_file.empty()
                             ? SSL_CTX_set_default_verify_paths(ctx_.get()) == 1
                             : SSL_CTX_load_verify_locations(ctx_.get(), rq_.tls.ca_file.c_str(), nullptr) == 1;
        if (!cas)
            return fail(Error::tls, "CA file " + (rq_.tls.ca_file.empty() ? "(system default)" : rq_.tls.ca_file) +
                                        ": " + tls::openssl_errors("cannot be loaded"));
        if (!rq_.tls.cert_file.empty() &&
            SSL_CTX_use_certificate_chain_file(ctx_.get(), rq_.tls.cert_file.c_str()) != 1)
            return fail(Error::tls,
                        "client certificate " + rq_.tls.cert_file + ": " + tls::openssl_errors("cannot be loaded"));
        if (!rq_.tls.key_file.empty() &&
            (SSL_CTX_use_PrivateKey_file(ctx_.get(), rq_.tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
             SSL_CTX_check_private_key(ctx_.get()) != 1))
            return fail(Error::tls, "client key " + rq_.tls.key_file + ": " + tls::openssl_errors("cannot be loaded"));
        ssl_.reset(SSL_new(ctx_.get()));
        BIO* rbio = BIO_new(BIO_s_mem());
        BIO* wbio = BIO_new(BIO_s_mem());
        if (!ssl_ || !rbio || !wbio) {
            BIO_free(rbio);
            BIO_free(wbio);
            return fail(Error::tls, "TLS: " + tls::openssl_errors("out of memory"));
        }
        SSL_set_bio(ssl_.get(), rbio, wbio);  // the SSL owns both from here
        rbio_ = rbio;
        wbio_ = wbio;
        // Servers that close without close_notify are common; a body's framing says whether it
        // is whole, and an answer read until close is one whatever the alert says.
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF  // OpenSSL 3; 1.1 takes such an end as a clean one
        SSL_set_options(ssl_.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
        // The certificate must name the host as the caller wrote it: an address literal by its
        // IP SAN, a name by its DNS SAN (and only a name goes out as SNI, RFC 6066 3).
        const bool literal = is_ip_literal(host_);
        const bool named = literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_.get()), host_.c_str()) == 1
                                   : SSL_set_tlsext_host_name(ssl_.get(), host_.c_str()) == 1 &&
                                         SSL_set1_host(ssl_.get(), host_.c_str()) == 1;
        if (!named) return fail(Error::tls, "TLS: cannot check for the name " + host_ + ": " + tls::openssl_errors(""));
        SSL_set_connect_state(ssl_.get());
        if (tls_drive([this] { return SSL_do_handshake(ssl_.get()); }) > 0) return true;
        // A server that hangs up mid-handshake (it wants a certificate we lack, or speaks no
        // TLS) failed the handshake, as much as one that sent an alert.
        if (res_.error == Error::closed) res_.error = Error::tls;
        return false;
    }

    // A TLS 1.3 server checks our certificate after our side of the handshake is done: its
    // refusal is an alert, then a close that may meet our request as a reset. The alert, if
    // it came before, says why better than the reset.
    void tls_alert_after_close() {
        if (!ssl_ || res_.error != Error::closed) return;
        char buf[kReadChunk];
        for (ssize_t n; (n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT)) > 0;)
            BIO_write(rbio_, buf, static_cast<int>(n));
        BIO_set_mem_eof_return(rbio_, 0);
        ERR_clear_error();
        if (const int rc = SSL_read(ssl_.get(), buf, sizeof buf);
            rc <= 0 && SSL_get_error(ssl_.get(), rc) == SSL_ERROR_SSL) {
            res_.error = Error::tls;
            res_.detail = "TLS with " + host_ + " " + phase_ + ": " + tls::openssl_errors("refused");
        }
    }

    // Sends whatever OpenSSL has written into its BIO.
    bool flush_tls() {
        char buf[kReadChunk];
        while (BIO_ctrl_pending(wbio_) > 0) {
            const int n = BIO_read(wbio_, buf, sizeof buf);
            if (n <= 0 || !raw_send(buf, static_cast<size_t>(n))) return n > 0 ? false : fail(Error::tls, "TLS: BIO");
        }
        return true;
    }

    // Runs one OpenSSL call to its end: what it wrote goes out, what it wants to read comes in.
    // Its result (> 0), 0 at the end of the stream, -1 with the failure recorded.
    template <class Op>
    int tls_drive(Op op) {
        for (;;) {
            ERR_clear_error();
            const int rc = op();
            const int e = rc > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_.get(), rc);
            if (!flush_tls()) return -1;
            if (rc > 0) return rc;
            switch (e) {
                case SSL_ERROR_WANT_WRITE: continue;  // the memory BIO took it all; flushed above
                case SSL_ERROR_WANT_READ: {
                    if (tls_eof_) break;  // it was told of the end already
                    char buf[kReadChunk];
                    const ssize_t n = raw_recv(buf, sizeof buf);
                    if (n < 0) return -1;
                    if (n == 0) {
                        tls_eof_ = true;
                        BIO_set_mem_eof_return(rbio_, 0);  // OpenSSL's next read sees the end
                    } else {
                        BIO_write(rbio_, buf, static_cast<int>(n));
                    }
                    continue;
                }
                case SSL_ERROR_ZERO_RETURN: return 0;
                default: break;
            }
            if (SSL_is_init_finished(ssl_.get()) && e == SSL_ERROR_SYSCALL) return 0;
            std::string why = tls::openssl_errors(SSL_is_init_finished(ssl_.get()) ? "connection error"
                                                                                   : "the peer closed the connection");
            if (const long v = SSL_get_verify_result(ssl_.get()); v != X509_V_OK)
                why += " (" + std::string(X509_verify_cert_error_string(v)) + ")";
            fail(Error::tls, "TLS with " + host_ + " " + phase_ + ": " + why);
            return -1;
        }
    }

    // ---- either

    bool send_all(const std::string& bytes) {
        if (!ssl_) return raw_send(bytes.data(), bytes.size());
        for (size_t off = 0; off < bytes.size();) {
            const int chunk = static_cast<int>(std::min<size_t>(bytes.size() - off, 1 << 20));
            const int n = tls_drive([&] { return SSL_write(ssl_.get(), bytes.data() + off, chunk); });
            if (n < 0) {
                tls_alert_after_close();
                return false;
            }
            if (n == 0) return fail(Error::closed, std::string("the peer closed the connection ") + phase_);
            off += static_cast<size_t>(n);
        }
        return true;
    }

    // More bytes into buf_: true when some came, false at the end of the stream (eof_) or on failure.
    bool more() {
        if (pos_ > 0 && pos_ * 2 >= buf_.size()) {
            buf_.erase(0, pos_);
            pos_ = 0;
        }
        char tmp[kReadChunk];
        ssize_t n = 0;
        if (ssl_) {
            n = tls_drive([&] { return SSL_read(ssl_.get(), tmp, sizeof tmp); });
            if (n < 0) tls_alert_after_close();
        } else {
            n = raw_recv(tmp, sizeof tmp);
        }
        if (n <= 0) {
            eof_ = n == 0;
            return false;
        }
        buf_.append(tmp, static_cast<size_t>(n));
        return true;
    }

    bool closed_early(const char* what) {
        return fail(Error::closed, std::string("the peer closed the connection before ") + what);
    }

    // One line of the head without its CRLF (a bare LF ends one too), counted against budget_.
    std::optional<std::string> line(const char* what) {
        for (size_t scanned = 0;;) {  // from pos_, which more() may move
            if (const size_t lf = buf_.find('\n', pos_ + scanned); lf != std::string::npos) {
                const size_t used = lf + 1 - pos_;
                if (used > budget_) break;
                budget_ -= used;
                size_t end = lf;
                if (end > pos_ && buf_[end - 1] == '\r') --end;
                std::string out = buf_.substr(pos_, end - pos_);
                pos_ = lf + 1;
                return out;
            }
            if (buf_.size() - pos_ > budget_) break;
            scanned = buf_.size() - pos_;
            if (!more()) {
                if (eof_) closed_early(what);
                return std::nullopt;
            }
        }
        fail(Error::protocol, "the answer's head is over " + std::to_string(kMaxHead >> 10) + " KiB");
        return std::nullopt;
    }

    // Appends n bytes of body (n already checked against max_body).
    bool body_bytes(uint64_t n) {
        while (n > 0) {
            if (pos_ == buf_.size() && !more()) return eof_ ? closed_early("the whole body") : false;
            const size_t k = std::min<uint64_t>(n, buf_.size() - pos_);
            res_.body.append(buf_, pos_, k);
            pos_ += k;
            n -= k;
        }
        return true;
    }

    bool over_cap(uint64_t more_bytes) {
        if (res_.body.size() + more_bytes <= rq_.max_body) return false;
        // What has come already stays, up to the cap: its first words may say why it is so long.
        res_.body.append(buf_, pos_, std::min(buf_.size() - pos_, rq_.max_body - res_.body.size()));
        pos_ = buf_.size();
        fail(Error::too_large, "the answer's body is larger than " + std::to_string(rq_.max_body) + " bytes");
        return true;
    }

    bool request_head(std::string& head) {
        // The port is left out where it is the scheme's own, as browsers and curl write it.
        const bool default_port = rq_.port == (rq_.tls.enabled ? 443 : 80);
        const bool v6 = host_.find(':') != std::string::npos;
        const std::string host = default_port ? (v6 ? "[" + host_ + "]" : host_) : host_port(host_, rq_.port);
        head = rq_.method + " " + rq_.target + " HTTP/1.1\r\nHost: " + host + "\r\n";
        for (const auto& [name, value] : rq_.headers) {
            // A value from a file (a token) must not add lines of its own to the request.
            if ((name + value).find_first_of("\r\n") != std::string::npos)
                return fail(Error::protocol, "the header " + name + " holds a line break");
            head += name + ": " + value + "\r\n";
        }
        if (!rq_.body.empty() || rq_.method == "POST" || rq_.method == "PUT" || rq_.method == "PATCH")
            head += "Content-Length: " + std::to_string(rq_.body.size()) + "\r\n";
        head += "Connection: close\r\n\r\n";
        return true;
    }

    bool read_head() {
        for (;;) {
            budget_ = kMaxHead;
            auto status = line("an answer");
            if (!status) return false;
            // "HTTP/1.x 200 OK": the version, one space, three digits, then a space or nothing.
            const std::string_view s = *status;
            int code = 0;
            if (s.size() < 12 || !s.starts_with("HTTP/1.") || s[7] < '0' || s[7] > '9' || s[8] != ' ' ||
                std::from_chars(s.data() + 9, s.data() + 12, code).ptr != s.data() + 12 || code < 100 ||
                (s.size() > 12 && s[12] != ' '))
                return fail(Error::protocol, "not an HTTP/1.x status line: " + std::string(s.substr(0, 64)));
            res_.status = code;
            res_.headers.clear();
            for (;;) {
                auto h = line("the end of the answer's head");
                if (!h) return false;
                if (h->empty()) break;
                const size_t colon = h->find(':');
                if (colon == 0 || colon == std::string::npos || (*h)[0] == ' ' || (*h)[0] == '\t' ||
                    h->find_first_of(" \t") < colon)
                    return fail(Error::protocol, "a malformed header line: " + h->substr(0, 64));
                res_.headers.emplace_back(h->substr(0, colon),
                                          std::string(trim_ows(std::string_view(*h).substr(colon + 1))));
            }
            if (code == 101) return fail(Error::protocol, "the server switched protocols unasked");
            if (code >= 200) return true;
            // 100 Continue, 103 Early Hints: the answer follows.
        }
    }

    bool read_chunked() {
        budget_ = kMaxHead;  // the size lines and trailers together
        for (;;) {
            auto size_line = line("the whole body");
            if (!size_line) return false;
            // "1a3f;name=value": the extensions mean nothing to us.
            const std::string_view hex = trim_ows(std::string_view(*size_line).substr(0, size_line->find(';')));
            uint64_t n = 0;
            const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), n, 16);
            if (hex.empty() || ec != std::errc{} || end != hex.data() + hex.size())
                return fail(Error::protocol, "a malformed chunk size: " + size_line->substr(0, 64));
            if (n == 0) break;
            if (over_cap(n) || !body_bytes(n)) return false;
            auto crlf = line("the whole body");
            if (!crlf) return false;
            if (!crlf->empty()) return fail(Error::protocol, "a chunk longer than its size");
        }
        for (;;) {  // trailers, ignored
            auto t = line("the end of the trailers");
            if (!t) return false;
            if (t->empty()) return true;
        }
    }

    bool read_until_close() {
        for (;;) {
            if (pos_ < buf_.size()) {
                if (over_cap(buf_.size() - pos_)) return false;
                res_.body.append(buf_, pos_);
                pos_ = buf_.size();
            }
            if (!more()) return eof_;
        }
    }

    void read_answer() {
        if (!read_head()) return;
        if (rq_.method == "HEAD" || res_.status == 204 || res_.status == 304) return;
        std::string te, cl;
        for (const auto& [name, value] : res_.headers) {
            if (iequals(name, "Transfer-Encoding")) te += (te.empty() ? "" : ",") + value;
            if (iequals(name, "Content-Length")) {
                if (!cl.empty() && cl != value) {
                    fail(Error::protocol, "two different Content-Length headers");
                    return;
                }
                cl = value;
            }
        }
        bool ok = false;
        if (!te.empty()) {
            // RFC 9112 6.3: chunked last is chunked; any other coding last runs until the close.
            const auto comma = te.rfind(',');
            ok = iequals(trim_ows(std::string_view(te).substr(comma == std::string::npos ? 0 : comma + 1)), "chunked")
                     ? read_chunked()
                     : read_until_close();
        } else if (!cl.empty()) {
            uint64_t n = 0;
            const auto [end, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), n);
            if (ec != std::errc{} || end != cl.data() + cl.size()) {
                fail(Error::protocol, "a malformed Content-Length: " + cl.substr(0, 32));
                return;
            }
            ok = !over_cap(n) && body_bytes(n);
        } else {
            ok = read_until_close();
        }
        (void)ok;  // a failure is in res_ already
    }

    const Request& rq_;
    Response& res_;
    std::string host_;  // rq_.host, or the address where it has none; without brackets
    Fd fd_;
    std::unique_ptr<SSL_CTX, SslCtxFree> ctx_;
    std::unique_ptr<SSL, SslFree> ssl_;  // declared after ctx_: freed first
    BIO* rbio_ = nullptr;                // owned by ssl_
    BIO* wbio_ = nullptr;
    const char* phase_ = "while connecting";
    int poll_errno_ = 0;
    std::string buf_;  // read, not yet parsed from pos_ on
    size_t pos_ = 0;
    bool eof_ = false;
    bool tls_eof_ = false;  // the socket's end, passed on to OpenSSL
    size_t budget_ = kMaxHead;
};

}  // namespace

const char* to_string(Error e) {
    switch (e) {
        case Error::none: return "none";
        case Error::refused: return "refused";
        case Error::connect_timeout: return "connect_timeout";
        case Error::timeout: return "timeout";
        case Error::closed: return "closed";
        case Error::tls: return "tls";
        case Error::too_large: return "too_large";
        case Error::protocol: return "protocol";
        case Error::cancelled: return "cancelled";
    }
    return "unknown";
}

std::string Response::header(std::string_view name) const {
    const auto* v = find_header(headers, name);
    return v ? *v : std::string();
}

Response fetch(const Request& rq) {
    Response res;
    try {
        Exchange(rq, res).run();
    } catch (const std::exception& e) {  // out of memory
        res.error = Error::closed;
        res.detail = e.what();
    }
    return res;
}

}  // namespace rocewatch::http
