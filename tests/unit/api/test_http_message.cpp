// The server's request parsing and answer writing, on bytes: what handlers read from a gated
// request, and what goes on the wire for them.
#include <gtest/gtest.h>
#include <zlib.h>

#include <memory>
#include <string>

#include "api/http_message.hpp"

namespace rocewatch::api {
namespace {

std::string gunzip(const std::string& in) {
    z_stream z{};
    EXPECT_EQ(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
    std::string out(1 << 20, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
    out.resize(z.total_out);
    inflateEnd(&z);
    return out;
}

std::string body_of(const std::string& answer) { return answer.substr(answer.find("\r\n\r\n") + 4); }

}  // namespace

TEST(HttpMessage, ARequestIsParsedIntoWhatHandlersRead) {
    const auto r = parse_request(
        "POST /api/v1/devices/mlx5%5F0?limit=3&object=a%2Fb+c&limit=4&flag HTTP/1.1\r\nHost: x\r\n"
        "content-type: application/x-www-form-urlencoded\r\nX-Pad:  spaced \t\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/api/v1/devices/mlx5%5F0?limit=3&object=a%2Fb+c&limit=4&flag");
    EXPECT_EQ(r.path, "/api/v1/devices/mlx5_0") << "the path percent-decoded, '+' kept";
    EXPECT_EQ(r.get_param_value("object"), "a/b c") << "the query: %XX and '+' decoded";
    EXPECT_EQ(r.get_param_value("limit"), "3") << "the first of two";
    EXPECT_EQ(r.get_param_value_count("limit"), 2u) << "both counted, even when equal";
    EXPECT_TRUE(r.has_param("flag"));
    EXPECT_EQ(r.get_param_value("flag"), "");
    EXPECT_FALSE(r.has_param("missing"));
    EXPECT_EQ(r.get_header_value("CONTENT-TYPE"), "application/x-www-form-urlencoded");
    EXPECT_EQ(r.get_header_value("x-pad"), "spaced");
    EXPECT_EQ(r.body, "{\"a\":1}") << "a body labelled a form is a body, never parameters";
    EXPECT_EQ(r.params.size(), 4u);
}

TEST(HttpMessage, BrokenPercentEscapesStayAsSent) {
    EXPECT_EQ(decode_url("a%2", false), "a%2");
    EXPECT_EQ(decode_url("%zz%41", false), "%zzA");
    EXPECT_EQ(decode_url("a+b", false), "a+b");
    EXPECT_EQ(decode_url("a+b", true), "a b");
    EXPECT_EQ(parse_request("GET /x%00y HTTP/1.1\r\n\r\n").path, std::string("/x\0y", 4));
}

TEST(HttpMessage, AnAnswerCarriesItsLengthAndFraming) {
    const auto req = parse_request("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    Response res;
    res.status = 200;
    res.set_content("{\"ok\":true}", "application/json");
    const auto a = write_answer(req, res, false, {.close = false, .keep_alive_timeout_s = 7, .keep_alive_max = 9});
    EXPECT_EQ(a.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << a;
    EXPECT_NE(a.find("\r\nContent-Type: application/json\r\n"), std::string::npos) << a;
    EXPECT_NE(a.find("\r\nKeep-Alive: timeout=7, max=9\r\n"), std::string::npos) << a;
    EXPECT_EQ(a.find("Connection:"), std::string::npos) << a;
    EXPECT_NE(a.find("\r\nContent-Length: 11\r\n\r\n{\"ok\":true}"), std::string::npos) << a;

    Response closing;
    closing.status = 404;
    const auto c = write_answer(req, closing, false, {});
    EXPECT_EQ(c.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << c;
    EXPECT_NE(c.find("\r\nConnection: close\r\n"), std::string::npos) << c;
    EXPECT_NE(c.find("\r\nContent-Length: 0\r\n\r\n"), std::string::npos) << c;
    EXPECT_EQ(c.find("Content-Type"), std::string::npos) << "no body, no type";
}

TEST(HttpMessage, HeadGetsTheHeadersOfGetWithoutTheBody) {
    Response res;
    res.status = 200;
    res.set_content("ready\n", "text/plain");
    const auto a = write_answer(parse_request("HEAD /readyz HTTP/1.1\r\n\r\n"), res, false, {});
    EXPECT_TRUE(a.ends_with("Content-Length: 6\r\n\r\n")) << a;
}

TEST(HttpMessage, TextAndJsonGoCompressedOnlyToAClientThatTakesGzip) {
    const auto req = parse_request("GET / HTTP/1.1\r\n\r\n");
    const std::string json = "{\"devices\": [" + std::string(2000, ' ') + "]}";
    Response res;
    res.status = 200;
    res.set_content(json, "application/json");
    const auto a = write_answer(req, res, true, {});
    EXPECT_NE(a.find("\r\nContent-Encoding: gzip\r\n"), std::string::npos) << a.substr(0, 300);
    EXPECT_EQ(gunzip(body_of(a)), json);
    EXPECT_NE(a.find("Content-Length: " + std::to_string(body_of(a).size()) + "\r\n"), std::string::npos);

    Response plain;
    plain.status = 200;
    plain.set_content(json, "application/json");
    EXPECT_EQ(body_of(write_answer(req, plain, false, {})), json);

    Response binary;
    binary.status = 200;
    binary.set_content(json, "application/octet-stream");
    EXPECT_EQ(write_answer(req, binary, true, {}).find("Content-Encoding"), std::string::npos) << "not text";
}

TEST(HttpMessage, ABodyTheHandlerCodedGoesAsItIs) {
    const auto req = parse_request("GET /metrics HTTP/1.1\r\n\r\n");
    Response res;
    res.status = 200;
    res.set_header("Content-Encoding", "gzip");
    res.set_shared_content(std::make_shared<const std::string>("\x1f\x8b already coded"), "text/plain");
    const auto a = write_answer(req, res, true, {});
    EXPECT_EQ(body_of(a), "\x1f\x8b already coded") << "compressed once";
    EXPECT_EQ(a.find("Content-Encoding", a.find("Content-Encoding") + 1), std::string::npos) << a;
}

TEST(HttpMessage, SetContentReplacesTheTypeAndEraseHeaderAnyCase) {
    Response res;
    res.set_content("a", "text/plain");
    res.set_content("{}", "application/json");
    EXPECT_EQ(res.get_header_value("content-type"), "application/json");
    EXPECT_EQ(res.headers.size(), 1u);
    res.set_header("X-A", "1");
    res.erase_header("x-a");
    EXPECT_FALSE(res.has_header("X-A"));
}

}  // namespace rocewatch::api
