// The front gate's rules: what a request head must look like before the server parses it.
#include "api/request_gate.hpp"

#include <algorithm>
#include <cstdint>

#include "util/http_text.hpp"

namespace rocewatch::api {

namespace {

bool is_tchar(char c) {
    // RFC 9110 token characters.
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    switch (c) {
        case '!':
        case '#':
        case '$':
        case '%':
        case '&':
        case '\'':
        case '*':
        case '+':
        case '-':
        case '.':
        case '^':
        case '_':
        case '`':
        case '|':
        case '~': return true;
        default: return false;
    }
}

bool is_token(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!is_tchar(c)) return false;
    return true;
}

bool icontains(std::string_view hay, std::string_view needle) {
    if (needle.size() > hay.size()) return false;
    for (size_t i = 0; i + needle.size() <= hay.size(); ++i)
        if (iequals(hay.substr(i, needle.size()), needle)) return true;
    return false;
}

HeadCheck reject(int status, RejectReason reason, std::string message) {
    HeadCheck h;
    h.verdict = HeadCheck::Verdict::reject;
    h.status = status;
    h.reason = reason;
    h.message = std::move(message);
    return h;
}

// A rejection, or a default HeadCheck (verdict incomplete: nothing wrong yet) when the line is fine.
HeadCheck check_request_line(std::string_view line) {
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
        line.find(' ', sp2 + 1) != std::string_view::npos)
        return reject(400, RejectReason::malformed, "malformed request line");
    const auto method = line.substr(0, sp1);
    const auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const auto version = line.substr(sp2 + 1);
    if (!is_token(method) || target.empty() || version.empty())
        return reject(400, RejectReason::malformed, "malformed request line");
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
        if (version.substr(0, 5) == "HTTP/")
            return reject(505, RejectReason::version, "only HTTP/1.0 and HTTP/1.1 are served");
        return reject(400, RejectReason::malformed, "malformed request line");
    }
    if (method != "GET" && method != "HEAD" && method != "POST")
        return reject(405, RejectReason::method, "method not allowed: this API serves GET, HEAD and POST");
    if (target.front() != '/') return reject(400, RejectReason::malformed, "request target must be an absolute path");
    return {};
}

// What earlier header lines said that later ones are judged against.
struct SeenHeaders {
    bool content_length = false;
    bool authorization = false;
    bool host = false;
    uint64_t length = 0;
};

HeadCheck check_header_line(std::string_view line, SeenHeaders& seen, const ApiOptions& o) {
    const size_t colon = line.find(':');
    // A name must be a bare token: this also refuses obs-fold continuation lines and
    // "Name : value", which parsers file under different keys.
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
        return reject(400, RejectReason::malformed, "malformed header line");
    const auto name = line.substr(0, colon);
    const auto value = trim_ows(line.substr(colon + 1));

    // cpp-httplib, which parsed requests here until stop 38, stored REMOTE_ADDR/REMOTE_PORT
    // (and LOCAL_*) as ordinary headers after the client's own: a client could name its own
    // address. Still refused: CGI-style gateways and proxies read them the same way.
    for (std::string_view spoofable : {"REMOTE_ADDR", "REMOTE_PORT", "LOCAL_ADDR", "LOCAL_PORT"})
        if (iequals(name, spoofable))
            return reject(400, RejectReason::spoofed_header, "header " + std::string(name) + " is reserved");

    // No route takes a chunked body, and its length is unknown until it has all arrived.
    if (iequals(name, "Transfer-Encoding")) {
        if (icontains(value, "chunked"))
            return reject(411, RejectReason::transfer_encoding,
                          "chunked request bodies are not accepted; send Content-Length");
        return reject(501, RejectReason::transfer_encoding, "transfer codings are not implemented");
    }
    // A compressed body would have to be inflated, without bound: decompression bombs.
    if (iequals(name, "Content-Encoding"))
        return reject(415, RejectReason::content_encoding, "compressed request bodies are not accepted");

    // Handlers read the first of several, a proxy may check the last: a request
    // must not carry one credential for the proxy and another for us.
    if (iequals(name, "Authorization")) {
        if (seen.authorization) return reject(400, RejectReason::malformed, "more than one Authorization header");
        seen.authorization = true;
    }

    // RFC 9112 3.2: more than one Host is a 400, whatever the version.
    if (iequals(name, "Host")) {
        if (seen.host) return reject(400, RejectReason::malformed, "more than one Host header");
        seen.host = true;
    }

    if (iequals(name, "Content-Length")) {
        // One plain decimal value only: "%31%30" or "10, 20" means different lengths to
        // different parsers (cpp-httplib URL-decoded the value and read it with strtoull).
        if (seen.content_length) return reject(400, RejectReason::malformed, "more than one Content-Length");
        seen.content_length = true;
        if (value.empty()) return reject(400, RejectReason::malformed, "empty Content-Length");
        for (char c : value)
            if (c < '0' || c > '9') return reject(400, RejectReason::malformed, "Content-Length is not a number");
        // More digits than fit in 64 bits is certainly too large; leading zeros do not count
        // (1*DIGIT: "000...05" is 5).
        if (value.size() - std::min(value.find_first_not_of('0'), value.size()) > 19)
            return reject(413, RejectReason::body_too_large, "request body too large");
        uint64_t n = 0;
        for (char c : value) n = n * 10 + static_cast<uint64_t>(c - '0');
        if (n > o.max_body_bytes)
            return reject(413, RejectReason::body_too_large,
                          "request body too large (limit " + std::to_string(o.max_body_bytes) + " bytes)");
        seen.length = n;
    }
    return {};
}

}  // namespace

const char* to_string(RejectReason r) {
    switch (r) {
        case RejectReason::header_too_large: return "header_too_large";
        case RejectReason::too_many_headers: return "too_many_headers";
        case RejectReason::timeout: return "timeout";
        case RejectReason::transfer_encoding: return "transfer_encoding";
        case RejectReason::length_required: return "length_required";
        case RejectReason::content_encoding: return "content_encoding";
        case RejectReason::body_too_large: return "body_too_large";
        case RejectReason::spoofed_header: return "spoofed_header";
        case RejectReason::method: return "method";
        case RejectReason::version: return "version";
        case RejectReason::malformed: return "malformed";
        case RejectReason::overload: return "overload";
        case RejectReason::shutting_down: return "shutting_down";
        case RejectReason::tls_handshake: return "tls_handshake";
    }
    return "unknown";
}

const std::vector<RejectReason>& all_reject_reasons() {
    static const std::vector<RejectReason> all = {
        RejectReason::header_too_large,  RejectReason::too_many_headers, RejectReason::timeout,
        RejectReason::transfer_encoding, RejectReason::length_required,  RejectReason::content_encoding,
        RejectReason::body_too_large,    RejectReason::spoofed_header,   RejectReason::method,
        RejectReason::version,           RejectReason::malformed,        RejectReason::overload,
        RejectReason::shutting_down,     RejectReason::tls_handshake,
    };
    return all;
}

HeadCheck check_request_head(std::string_view head, const ApiOptions& o) {
    size_t pos = 0;
    size_t headers = 0;
    SeenHeaders seen;
    bool is_post = false;
    bool http11 = false;
    for (;;) {
        const size_t lf = head.find('\n', pos);
        if (lf == std::string_view::npos) {
            if (head.size() > o.max_header_bytes)
                return reject(431, RejectReason::header_too_large,
                              "request head larger than " + std::to_string(o.max_header_bytes) + " bytes");
            return {};  // incomplete
        }
        const size_t line_end = lf + 1;
        if (line_end > o.max_header_bytes)
            return reject(431, RejectReason::header_too_large,
                          "request head larger than " + std::to_string(o.max_header_bytes) + " bytes");
        // Some parsers skip lines ending in a bare LF, a proxy may not. Refusing them keeps
        // one reading of the head.
        if (lf == pos || head[lf - 1] != '\r')
            return reject(400, RejectReason::malformed, "header lines must end in CRLF");
        const std::string_view line = head.substr(pos, lf - 1 - pos);
        for (char c : line) {
            const auto u = static_cast<unsigned char>(c);
            if ((u < 0x20 && c != '\t') || u == 0x7f)
                return reject(400, RejectReason::malformed, "control character in request head");
        }

        if (pos == 0) {
            if (auto r = check_request_line(line); r.verdict == HeadCheck::Verdict::reject) return r;
            is_post = line.substr(0, 5) == "POST ";
            http11 = line.ends_with(" HTTP/1.1");
        } else if (line.empty()) {
            // A POST body without Content-Length would end only when the client closes.
            if (is_post && !seen.content_length)
                return reject(411, RejectReason::length_required, "POST needs a Content-Length");
            // RFC 9112 3.2: a server must answer 400 to an HTTP/1.1 request without Host.
            if (http11 && !seen.host) return reject(400, RejectReason::malformed, "HTTP/1.1 request without Host");
            HeadCheck ok;
            ok.verdict = HeadCheck::Verdict::accept;
            ok.head_bytes = line_end;
            ok.content_length = static_cast<size_t>(seen.length);
            return ok;
        } else {
            if (++headers > o.max_headers)
                return reject(431, RejectReason::too_many_headers,
                              "more than " + std::to_string(o.max_headers) + " header lines");
            if (auto r = check_header_line(line, seen, o); r.verdict == HeadCheck::Verdict::reject) return r;
        }
        pos = line_end;
    }
}

const char* status_reason(int status) {
    switch (status) {
        case 200: return "OK";
        case 204: return "No Content";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 409: return "Conflict";
        case 411: return "Length Required";
        case 413: return "Payload Too Large";
        case 415: return "Unsupported Media Type";
        case 416: return "Range Not Satisfiable";
        case 422: return "Unprocessable Content";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        case 505: return "HTTP Version Not Supported";
        default: return "Error";
    }
}

}  // namespace rocewatch::api
