// Asking the running rssauditd over its control socket: one request, one
// response line (core/formats/control_protocol.h). Every failure is one line
// for the user, thrown as std::runtime_error (exit code 1).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "core/formats/control_protocol.h"
#include "core/formats/live_view.h"

namespace rssaudit::cli {

// $RSSAUDIT_SOCKET when set and not empty, else kDefaultSocketPath.
std::string default_socket_path();

// --socket PATH, defaulting to default_socket_path().
void add_socket_option(CLI::App& sub, std::string& path);

// No rssauditd at the socket: none there, or nothing listening on it.
struct DaemonNotRunning : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The successful response object to `request` from the daemon at
// `socket_path`. Fails with one line: the daemon not running ("rssauditd is
// not running (no socket at PATH)"), permission denied (naming the path and
// the group needed), no answer within `timeout`, or the daemon's error.
nlohmann::json ask_daemon(
    const std::string& socket_path, const Request& request,
    std::chrono::milliseconds timeout = std::chrono::seconds(5));

// A part of a response, or a failure naming the field the daemon got wrong.
DaemonHealth health_of(const nlohmann::json& response);
LiveProcess process_of(const nlohmann::json& j, const std::string& where);

}  // namespace rssaudit::cli
