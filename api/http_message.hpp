// The server's request and answer: a request the front end read whole and the gate judged,
// parsed into what handlers read; an answer written into the bytes the front end sends.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocewatch::api {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct Request {
    std::string method;                                       // GET, HEAD or POST (the gate refuses the rest)
    std::string target;                                       // as sent: path and query
    std::string path;                                         // the target's path, percent-decoded
    HeaderList headers;                                       // in the order sent
    std::vector<std::pair<std::string, std::string>> params;  // the query's, decoded, every one in order
    std::string body;
    std::string remote_addr;
    int remote_port = -1;
    std::smatch matches;  // the route's captures, into `path`

    [[nodiscard]] bool has_header(std::string_view name) const;
    // The first header `name` (any case), "" when absent.
    [[nodiscard]] std::string get_header_value(std::string_view name) const;
    [[nodiscard]] bool has_param(std::string_view name) const;
    // The first value of parameter `name`, "" when absent.
    [[nodiscard]] std::string get_param_value(std::string_view name) const;
    [[nodiscard]] size_t get_param_value_count(std::string_view name) const;
};

struct Response {
    int status = -1;  // -1: not set by a handler (200 when routed, 404 when not)
    HeaderList headers;
    std::string body;
    // A body shared with a cache (/metrics), sent as it is; `body` is then empty.
    std::shared_ptr<const std::string> shared_body;

    [[nodiscard]] bool has_header(std::string_view name) const;
    [[nodiscard]] std::string get_header_value(std::string_view name) const;
    void set_header(std::string name, std::string value);  // adds a line; erase_header first to replace
    void erase_header(std::string_view name);
    void set_content(std::string text, std::string_view content_type);
    void set_shared_content(std::shared_ptr<const std::string> bytes, std::string_view content_type);
    [[nodiscard]] std::string_view content() const { return shared_body ? *shared_body : body; }
};

using Handler = std::function<void(const Request&, Response&)>;

// `s` with every %XX decoded (and '+' as a space where `plus_is_space`, as in a query);
// a '%' not followed by two hex digits stays as it is.
[[nodiscard]] std::string decode_url(std::string_view s, bool plus_is_space);

// A request the gate accepted (a well-formed HTTP/1.x head, then exactly Content-Length body
// bytes), parsed. Pure.
[[nodiscard]] Request parse_request(std::string_view bytes);

// How an answer ends the exchange: `close` says Connection: close; otherwise the Keep-Alive
// header tells the client the idle timeout and the requests left.
struct AnswerFraming {
    bool close = true;
    long keep_alive_timeout_s = 5;
    size_t keep_alive_max = 100;
};

// Whether an answer of this Content-Type is text worth compressing (text/*, JSON).
[[nodiscard]] bool compressible(std::string_view content_type);

// The answer's bytes: status line, headers (Content-Length always; Content-Type text/plain
// for a body without one), and the body unless the request was HEAD. A body of a
// compressible type goes gzip-compressed to a client that takes gzip (`gzip`), unless the
// handler coded it itself (Content-Encoding set).
[[nodiscard]] std::string write_answer(const Request& req, Response& res, bool gzip, const AnswerFraming& framing);

}  // namespace rocewatch::api
