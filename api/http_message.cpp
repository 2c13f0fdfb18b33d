// Parsing a gated request and writing an answer: pure, no sockets.
#include "api/http_message.hpp"

#include <algorithm>

#include "api/gzip_once.hpp"
#include "util/http_text.hpp"
#include "api/request_gate.hpp"

namespace rocewatch::api {
namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

bool Request::has_header(std::string_view name) const { return find_header(headers, name) != nullptr; }

std::string Request::get_header_value(std::string_view name) const {
    const auto* v = find_header(headers, name);
    return v ? *v : std::string();
}

bool Request::has_param(std::string_view name) const { return get_param_value_count(name) > 0; }

std::string Request::get_param_value(std::string_view name) const {
    for (const auto& [n, v] : params)
        if (n == name) return v;
    return {};
}

size_t Request::get_param_value_count(std::string_view name) const {
    return static_cast<size_t>(std::ranges::count_if(params, [&](const auto& p) { return p.first == name; }));
}

bool Response::has_header(std::string_view name) const { return find_header(headers, name) != nullptr; }

std::string Response::get_header_value(std::string_view name) const {
    const auto* v = find_header(headers, name);
    return v ? *v : std::string();
}

void Response::set_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
}

void Response::erase_header(std::string_view name) {
    std::erase_if(headers, [&](const auto& h) { return iequals(h.first, name); });
}

void Response::set_content(std::string text, std::string_view content_type) {
    body = std::move(text);
    shared_body.reset();
    erase_header("Content-Type");
    set_header("Content-Type", std::string(content_type));
}

void Response::set_shared_content(std::shared_ptr<const std::string> bytes, std::string_view content_type) {
    body.clear();
    shared_body = std::move(bytes);
    erase_header("Content-Type");
    set_header("Content-Type", std::string(content_type));
}

std::string decode_url(std::string_view s, bool plus_is_space) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
            out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            i += 2;
        } else {
            out += plus_is_space && s[i] == '+' ? ' ' : s[i];
        }
    }
    return out;
}

Request parse_request(std::string_view bytes) {
    Request r;
    const size_t line_end = bytes.find("\r\n");
    const std::string_view line = bytes.substr(0, line_end);
    const size_t sp1 = line.find(' ');
    const size_t sp2 = line.rfind(' ');
    r.method = std::string(line.substr(0, sp1));
    if (sp1 != std::string_view::npos && sp2 > sp1) r.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
    const size_t q = r.target.find('?');
    r.path = decode_url(std::string_view(r.target).substr(0, q), false);
    if (q != std::string::npos) {
        std::string_view query = std::string_view(r.target).substr(q + 1);
        while (!query.empty()) {
            const size_t amp = query.find('&');
            const std::string_view pair = query.substr(0, amp);
            if (!pair.empty()) {
                const size_t eq = pair.find('=');
                r.params.emplace_back(decode_url(pair.substr(0, eq), true),
                                      eq == std::string_view::npos ? std::string()
                                                                   : decode_url(pair.substr(eq + 1), true));
            }
            query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        }
    }
    size_t at = line_end == std::string_view::npos ? bytes.size() : line_end + 2;
    while (at < bytes.size()) {
        const size_t end = bytes.find("\r\n", at);
        if (end == std::string_view::npos || end == at) {
            at = end == std::string_view::npos ? bytes.size() : end + 2;  // the blank line
            break;
        }
        const std::string_view h = bytes.substr(at, end - at);
        const size_t colon = h.find(':');
        if (colon != std::string_view::npos)
            r.headers.emplace_back(std::string(h.substr(0, colon)), std::string(trim_ows(h.substr(colon + 1))));
        at = end + 2;
    }
    r.body = std::string(bytes.substr(std::min(at, bytes.size())));
    return r;
}

bool compressible(std::string_view content_type) {
    const auto type = trim_ows(content_type.substr(0, content_type.find(';')));
    return type.starts_with("text/") || iequals(type, "application/json");
}

std::string write_answer(const Request& req, Response& res, bool gzip, const AnswerFraming& framing) {
    if (framing.close) {
        res.erase_header("Connection");
        res.set_header("Connection", "close");
    } else {
        res.set_header("Keep-Alive", "timeout=" + std::to_string(framing.keep_alive_timeout_s) +
                                         ", max=" + std::to_string(framing.keep_alive_max));
    }
    if (!res.content().empty() && !res.has_header("Content-Type")) res.set_header("Content-Type", "text/plain");
    if (gzip && !res.content().empty() && !res.has_header("Content-Encoding") &&
        compressible(res.get_header_value("Content-Type"))) {
        res.body = gzip_with_tail({}, res.content());
        res.shared_body.reset();
        res.set_header("Content-Encoding", "gzip");
    }
    const std::string_view body = res.content();
    std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " + status_reason(res.status) + "\r\n";
    for (const auto& [name, value] : res.headers) {
        if (iequals(name, "Content-Length")) continue;
        out.append(name).append(": ").append(value).append("\r\n");
    }
    out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n\r\n");
    if (req.method != "HEAD") out.append(body);
    return out;
}

}  // namespace rocewatch::api
