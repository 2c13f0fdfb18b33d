// Raw error answers, peer addresses, log escaping and request classing for the front end.
#include "api/http_wire.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include "util/http_text.hpp"
#include "api/json_view.hpp"
#include "api/metrics_cache.hpp"
#include "api/request_gate.hpp"

namespace rocewatch::api {

std::string raw_error_response(int status, const std::string& message, const std::string& allow,
                               const std::string& headers) {
    const std::string body = dump_json(error_json(status, message));
    std::string r = "HTTP/1.1 " + std::to_string(status) + " " + status_reason(status) + "\r\n";
    r += "Content-Type: application/json\r\n";
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    if (status == 405) r += "Allow: " + (allow.empty() ? std::string("GET, HEAD, POST") : allow) + "\r\n";
    if (status == 503) r += "Retry-After: 1\r\n";
    r += headers;
    r += "Connection: close\r\n\r\n";
    return r + body;
}

std::string request_path(std::string_view head) {
    const std::string_view line = head.substr(0, head.find_first_of("\r\n"));
    const size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos) return "/";
    std::string_view target = line.substr(sp1 + 1);
    target = target.substr(0, target.find(' '));
    target = target.substr(0, target.find_first_of("?#"));
    return target.empty() ? "/" : std::string(target);
}

std::string address_of(const sockaddr_storage& ss, int& port) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
        port = ntohs(a.sin_port);
        return inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf) ? buf : "";
    }
    if (ss.ss_family == AF_INET6) {
        const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
        port = ntohs(a.sin6_port);
        return inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof buf) ? buf : "";
    }
    port = -1;
    return {};
}

namespace {

// The path of a GET or HEAD request line (without its query), "" for other methods.
std::string_view get_path(std::string_view head) {
    const size_t sp = head.find(' ');
    if (sp == std::string_view::npos) return {};
    const auto method = head.substr(0, sp);
    if (method != "GET" && method != "HEAD") return {};
    const auto rest = head.substr(sp + 1);
    return rest.substr(0, rest.find_first_of(" ?"));
}

}  // namespace

bool is_priority_request(std::string_view head) {
    const auto path = get_path(head);
    return path == "/metrics" || path == "/healthz" || path == "/readyz";
}

bool is_metrics_request(std::string_view head) { return get_path(head) == "/metrics"; }

bool is_http10(std::string_view head) { return head.substr(0, head.find("\r\n")).ends_with(" HTTP/1.0"); }

bool wants_close(std::string_view connection) {
    while (!connection.empty()) {
        const size_t comma = connection.find(',');
        if (iequals(trim_ows(connection.substr(0, comma)), "close")) return true;
        connection = comma == std::string_view::npos ? std::string_view{} : connection.substr(comma + 1);
    }
    return false;
}

namespace {

// Calls f(name, value) for each header line of a head the gate accepted (value trimmed),
// until f returns false or the blank line.
template <class F>
void for_each_header(std::string_view head, F&& f) {
    size_t at = head.find("\r\n");
    while (at != std::string_view::npos && at + 2 < head.size()) {
        const size_t start = at + 2;
        const size_t end = head.find("\r\n", start);
        const auto line = head.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        if (line.empty()) return;  // the blank line: no more headers
        const size_t colon = line.find(':');
        if (colon != std::string_view::npos && !f(line.substr(0, colon), trim_ows(line.substr(colon + 1)))) return;
        at = end;
    }
}

}  // namespace

std::string header_list(std::string_view head, std::string_view name) {
    std::string out;
    for_each_header(head, [&](std::string_view n, std::string_view v) {
        if (iequals(n, name)) {
            if (!out.empty()) out += ',';
            out += v;
        }
        return true;
    });
    return out;
}

std::string header_value(std::string_view head, std::string_view name) {
    std::string out;
    for_each_header(head, [&](std::string_view n, std::string_view v) {
        if (!iequals(n, name)) return true;
        out = v;
        return false;
    });
    return out;
}

}  // namespace rocewatch::api
