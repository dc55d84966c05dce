#include "core/formats/control_protocol.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "tests/support/sample_live_view.h"

namespace rssaudit {
namespace {

using nlohmann::json;

LiveView sample_view_source(const LabelScope&) {
  return testing::sample_live_view();
}

// Answers `line` over the sample view, counting the snapshots built.
struct Answerer {
  int views = 0;
  LabelScope scope;  // the last view's

  json operator()(const std::string& line) {
    const std::string out = answer_line(line, [this](const LabelScope& s) {
      ++views;
      scope = s;
      return testing::sample_live_view();
    });
    EXPECT_EQ(out.find('\n'), std::string::npos) << "one line: " << out;
    return json::parse(out);
  }
};

// The response must be an error, carry a reason, and not have built a view.
std::string error_of(const std::string& line) {
  Answerer a;
  const json r = a(line);
  EXPECT_EQ(r["ok"], false) << line;
  EXPECT_EQ(a.views, 0) << "a bad request must not build a snapshot: " << line;
  return r.value("error", "");
}

TEST(ControlProtocol, HealthAnswersTheDaemonsHealthFirstKeyOk) {
  Answerer a;
  const std::string out =
      answer_line(R"({"request":"health"})", sample_view_source);
  EXPECT_EQ(out.rfind(R"({"ok":true,)", 0), 0u) << out;
  const json r = a(R"({"request":"health"})");
  EXPECT_EQ(r["health"]["host"], "testhost");
  EXPECT_EQ(r["health"]["drops"], 7);
  EXPECT_FALSE(r.contains("processes"));
  EXPECT_EQ(a.views, 1);
}

TEST(ControlProtocol, IdIsEchoedOnSuccessAndOnError) {
  Answerer a;
  EXPECT_EQ(a(R"({"request":"health","id":"abc"})")["id"], "abc");
  EXPECT_EQ(a(R"({"id":42,"request":"health"})")["id"], 42);
  const json bad = a(R"({"request":"nope","id":[1,2]})");
  EXPECT_EQ(bad["ok"], false);
  EXPECT_EQ(bad["id"], json::array({1, 2}));
  EXPECT_FALSE(a(R"({"request":"health"})").contains("id"));
}

TEST(ControlProtocol, ProcessesTopNKeepsTheDaemonsRanking) {
  Answerer a;
  const json r = a(R"({"request":"processes","top":2})");
  ASSERT_EQ(r["ok"], true);
  EXPECT_EQ(r["total"], 4);
  ASSERT_EQ(r["processes"].size(), 2u);
  EXPECT_EQ(r["processes"][0]["pid"], 100);
  EXPECT_EQ(r["processes"][1]["pid"], 200);
  EXPECT_EQ(a(R"({"request":"processes"})")["processes"].size(), 4u);
  EXPECT_EQ(a(R"({"request":"processes","top":0})")["processes"].size(), 0u);
  // Larger than any list: all of them, not an error.
  EXPECT_EQ(
      a(R"({"request":"processes","top":18446744073709551615})")["processes"]
          .size(),
      4u);
}

TEST(ControlProtocol, ProcessByPidAndByComm) {
  Answerer a;
  const json by_pid = a(R"({"request":"process","pid":300})");
  ASSERT_EQ(by_pid["ok"], true) << by_pid;
  EXPECT_EQ(by_pid["process"]["comm"], "joined");
  EXPECT_EQ(by_pid["health"]["page_size"], 4096);
  const json by_comm = a(R"({"request":"process","comm":"big drifter"})");
  ASSERT_EQ(by_comm["ok"], true) << by_comm;
  EXPECT_EQ(by_comm["process"]["pid"], 100);
}

// Labels cost a /proc read per process not recorded yet: each request asks
// for those of the processes its answer names, and no more.
TEST(ControlProtocol, EachRequestAsksLabelsOfTheProcessesItNamesOnly) {
  Answerer a;
  a(R"({"request":"health"})");
  EXPECT_FALSE(a.scope.names(0, 100));
  EXPECT_FALSE(a.scope.pid.has_value());
  a(R"({"request":"processes","top":2})");
  EXPECT_TRUE(a.scope.names(1, 200));
  EXPECT_FALSE(a.scope.names(2, 300));
  a(R"({"request":"processes"})");
  EXPECT_TRUE(a.scope.names(1'000'000, 7));
  a(R"({"request":"process","pid":300})");
  EXPECT_TRUE(a.scope.names(2, 300));
  EXPECT_FALSE(a.scope.names(0, 100));
  a(R"({"request":"process","comm":"big drifter"})");
  EXPECT_TRUE(a.scope.names(1'000'000, 7));
}

TEST(ControlProtocol, UnknownOrAmbiguousProcessIsAnError) {
  Answerer a;
  EXPECT_EQ(a(R"({"request":"process","pid":999})")["error"],
            "no audited process with pid 999");
  EXPECT_EQ(a(R"({"request":"process","comm":"nobody"})")["error"],
            "no audited process with comm 'nobody'");
  EXPECT_EQ(a(R"({"request":"process","comm":"worker"})")["error"],
            "comm 'worker' matches 2 processes (pids 200, 400); ask by pid");
}

TEST(ControlProtocol, MalformedLinesGetClearErrors) {
  EXPECT_EQ(error_of(""), "empty request: send one JSON object per line");
  EXPECT_EQ(error_of("  \t\r"), "empty request: send one JSON object per line");
  EXPECT_EQ(error_of("{"), "invalid JSON: send one JSON object per line");
  EXPECT_EQ(error_of("health"), "invalid JSON: send one JSON object per line");
  EXPECT_EQ(error_of(std::string("\0\xff\x01garbage", 10)),
            "invalid JSON: send one JSON object per line");
  EXPECT_EQ(error_of("[1,2]"), "expected a JSON object, got [1,2]");
  EXPECT_EQ(error_of("42"), "expected a JSON object, got 42");
  EXPECT_EQ(error_of("null"), "expected a JSON object, got null");
  EXPECT_EQ(error_of(R"({"request":"health"} {"request":"health"})"),
            "invalid JSON: send one JSON object per line");
}

TEST(ControlProtocol, UnknownRequestsAndFieldsAreNamed) {
  EXPECT_EQ(error_of("{}"),
            R"(missing "request": one of "health", "processes", "process")");
  EXPECT_EQ(error_of(R"({"request":"shutdown"})"),
            R"(unknown request "shutdown": one of "health", "processes", )"
            R"("process")");
  EXPECT_EQ(error_of(R"({"request":5})"), "request: expected a string, got 5");
  EXPECT_EQ(error_of(R"({"request":"process","pdi":5})"),
            "unknown field 'pdi' in a 'process' request");
  EXPECT_EQ(error_of(R"({"request":"health","top":5})"),
            "unknown field 'top' in a 'health' request");
}

TEST(ControlProtocol, WrongTypesAndRangesAreNamed) {
  EXPECT_EQ(error_of(R"({"request":"processes","top":"5"})"),
            "top: expected an integer from 0 to 18446744073709551615, got "
            "\"5\"");
  EXPECT_EQ(error_of(R"({"request":"processes","top":-1})"),
            "top: expected an integer from 0 to 18446744073709551615, got -1");
  EXPECT_EQ(error_of(R"({"request":"processes","top":1.5})"),
            "top: expected an integer from 0 to 18446744073709551615, got 1.5");
  EXPECT_EQ(error_of(R"({"request":"process","pid":0})"),
            "pid: expected an integer from 1 to 4294967295, got 0");
  EXPECT_EQ(error_of(R"({"request":"process","pid":4294967296})"),
            "pid: expected an integer from 1 to 4294967295, got 4294967296");
  EXPECT_EQ(error_of(R"({"request":"process","pid":"12"})"),
            "pid: expected an integer from 1 to 4294967295, got \"12\"");
  EXPECT_EQ(error_of(R"({"request":"process","pid":null})"),
            "pid: expected an integer from 1 to 4294967295, got null");
  EXPECT_EQ(error_of(R"({"request":"process","comm":""})"),
            "comm: expected a non-empty string, got \"\"");
  EXPECT_EQ(error_of(R"({"request":"process","comm":["a"]})"),
            "comm: expected a non-empty string, got [\"a\"]");
  EXPECT_EQ(error_of(R"({"request":"process"})"),
            "a 'process' request needs \"pid\" or \"comm\", not both");
  EXPECT_EQ(error_of(R"({"request":"process","pid":1,"comm":"x"})"),
            "a 'process' request needs \"pid\" or \"comm\", not both");
}

TEST(ControlProtocol, HugeNumbersAreRangeErrorsNotWrappedValues) {
  // Past 2^64 the JSON parser yields a float: never a truncated pid.
  const std::string huge(30, '9');
  EXPECT_NE(error_of(R"({"request":"process","pid":)" + huge + "}")
                .find("pid: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"request":"processes","top":1e30})")
                .find("top: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"request":"processes","top":18446744073709551616})")
                .find("top: expected an integer"),
            std::string::npos);
  // 1e400 overflows a double: the parser rejects it as invalid JSON.
  EXPECT_EQ(error_of(R"({"request":"processes","top":1e400})"),
            "invalid JSON: send one JSON object per line");
}

TEST(ControlProtocol, ErrorMessagesStayShortForLongInput) {
  const std::string err =
      error_of(R"({"request":")" + std::string(10000, 'x') + "\"}");
  EXPECT_LT(err.size(), 200u);
}

TEST(ControlProtocol, AFailingSnapshotIsAnErrorResponse) {
  const json r = json::parse(answer_line(
      R"({"request":"health","id":1})", [](const LabelScope&) -> LiveView {
        throw std::runtime_error("out of memory");
      }));
  EXPECT_EQ(r["ok"], false);
  EXPECT_EQ(r["id"], 1);
  EXPECT_EQ(r["error"], "internal error: out of memory");
}

TEST(ControlProtocol, RequestLinesParseBackToTheSameRequest) {
  const Request requests[] = {
      {HealthRequest{}, json("h1")},
      {ProcessesRequest{5}, std::nullopt},
      {ProcessesRequest{}, json(3)},
      {ProcessRequest{42, {}}, std::nullopt},
      {ProcessRequest{{}, "big drifter"}, std::nullopt},
  };
  for (const Request& r : requests) {
    const std::string line = request_line(r);
    const Result<Request, RequestError> back = parse_request(line);
    ASSERT_TRUE(back.has_value()) << line << ": " << back.error().message;
    EXPECT_EQ(back->kind.index(), r.kind.index()) << line;
    EXPECT_EQ(back->id, r.id) << line;
    EXPECT_EQ(request_line(*back), line);
  }
}

TEST(ControlProtocol, ResponsesParseForTheClient) {
  const Result<json> ok = parse_response(answer_line(
      R"({"request":"health"})",
      [](const LabelScope&) { return testing::sample_live_view(); }));
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  EXPECT_EQ((*ok)["health"]["host"], "testhost");
  EXPECT_EQ(parse_response(error_line("boom")).error().message, "boom");
  EXPECT_FALSE(parse_response("garbage").has_value());
  EXPECT_FALSE(parse_response("[]").has_value());
  EXPECT_EQ(parse_response(R"({"ok":"yes"})").error().message,
            "response without \"ok\"");
  EXPECT_EQ(parse_response(R"({"ok":false})").error().message,
            "error without a reason");
}

// `f()` on a thread with a small stack (512 KiB, as a daemon thread may
// have): a recursion as deep as a request line allows overflows it.
void on_small_stack(const std::function<void()>& f) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 512 * 1024);
  pthread_t thread;
  auto run = [](void* arg) -> void* {
    (*static_cast<const std::function<void()>*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, run,
                           const_cast<std::function<void()>*>(&f)),
            0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

TEST(ControlProtocol, ADeeplyNestedRequestIsRefusedWithoutRecursingIntoIt) {
  const size_t levels = (kMaxRequestBytes - 2) / 2;
  const std::string arrays =
      std::string(levels, '[') + std::string(levels, ']');
  const std::string deep_id = R"({"request":"health","id":)" +
                              std::string(20000, '[') +
                              std::string(20000, ']') + "}";
  std::string answers[2];
  on_small_stack([&] {
    answers[0] = answer_line(arrays, sample_view_source);
    answers[1] = answer_line(deep_id, sample_view_source);
  });
  for (const std::string& a : answers) {
    const json r = json::parse(a);
    EXPECT_EQ(r["ok"], false);
    EXPECT_EQ(r["error"], "request nested deeper than 16 levels");
    EXPECT_FALSE(r.contains("id")) << "an id that deep is not echoed";
  }
  // An id within the limit is still echoed.
  const std::string nested = std::string(10, '[') + std::string(10, ']');
  Answerer a;
  EXPECT_EQ(a(R"({"request":"health","id":)" + nested + "}")["id"],
            json::parse(nested));
}

}  // namespace
}  // namespace rssaudit
