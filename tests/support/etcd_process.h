// Starts a real single-member etcd on loopback for integration tests.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "storage/etcd/etcd_client.h"

extern char** environ;

namespace ticketd::testing {

/// A free loopback TCP port (bound, read, released: good enough for tests).
inline std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    throw std::runtime_error("free_port: no socket");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

/// `etcd` (Debian's etcd-server) with random client and peer ports and a temporary data
/// directory; killed and removed on destruction. The binary is $ETCD_BINARY or /usr/bin/etcd.
class EtcdProcess {
 public:
  EtcdProcess() {
    char tmpl[] = "/tmp/ticketd-etcd-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    client_port_ = free_port();
    peer_port_ = free_port();
    start();
  }
  ~EtcdProcess() {
    kill();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  [[nodiscard]] std::string endpoint() const {
    return "http://127.0.0.1:" + std::to_string(client_port_);
  }

  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  /// Starts etcd (again, on the same ports and data) and waits until it answers.
  void start() {
    const char* env = std::getenv("ETCD_BINARY");
    const std::string binary = env != nullptr ? env : "/usr/bin/etcd";
    const std::string client = "http://127.0.0.1:" + std::to_string(client_port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
    std::vector<std::string> args = {binary,
                                     "--name=test",
                                     "--data-dir=" + dir_ + "/data",
                                     "--listen-client-urls=" + client,
                                     "--advertise-client-urls=" + client,
                                     "--listen-peer-urls=" + peer,
                                     "--initial-advertise-peer-urls=" + peer,
                                     "--initial-cluster=test=" + peer,
                                     "--log-outputs=" + dir_ + "/etcd.log",
                                     "--logger=zap"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawn(&pid_, binary.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
      throw std::runtime_error("cannot start " + binary);
    }
    auto c = etcd::EtcdClient::create({.endpoints = {endpoint()},
                                       .timeout = std::chrono::milliseconds(500),
                                       .connect_timeout = std::chrono::milliseconds(200)});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if ((*c)->get("ready-probe")) return;
      // Polling a child process's start-up, not synchronising test logic.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("etcd did not become ready; see " + dir_ + "/etcd.log");
  }

 private:
  std::string dir_;
  std::uint16_t client_port_ = 0;
  std::uint16_t peer_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace ticketd::testing
