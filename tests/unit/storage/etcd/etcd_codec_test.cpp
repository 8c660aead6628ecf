#include "storage/etcd/etcd_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace ticketd::etcd {
namespace {

struct Base64Case {
  std::string_view bytes;
  std::string_view text;
};

// RFC 4648 section 10 test vectors, plus bytes that are not text.
constexpr Base64Case kBase64Cases[] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
    {std::string_view("\xff\x00\xfe", 3), "/wD+"},
};

TEST(EtcdCodec, Base64MatchesTheRfcVectorsBothWays) {
  for (const auto& c : kBase64Cases) {
    EXPECT_EQ(base64_encode(c.bytes), c.text) << c.text;
    EXPECT_EQ(base64_decode(c.text), std::string(c.bytes)) << c.text;
  }
}

TEST(EtcdCodec, Base64DecodeAcceptsUnpaddedAndUrlSafeAndRejectsTheRest) {
  EXPECT_EQ(base64_decode("Zm8"), "fo");
  EXPECT_EQ(base64_decode("_wD-"), std::string("\xff\x00\xfe", 3));
  EXPECT_FALSE(base64_decode("Z"));
  EXPECT_FALSE(base64_decode("Zm9v!"));
  EXPECT_FALSE(base64_decode("Zm 9v"));
}

TEST(EtcdCodec, PrefixEndCoversExactlyTheKeysWithThePrefix) {
  EXPECT_EQ(prefix_end("/w/"), "/w0");
  EXPECT_EQ(prefix_end("a\xff"), "b");
  EXPECT_EQ(prefix_end("\xff\xff"), std::string(1, '\0'));
  EXPECT_EQ(prefix_end(""), std::string(1, '\0'));
}

TEST(EtcdCodec, EncodesAClaimTxnAsTheGatewayExpects) {
  TxnRequest t;
  t.compare.push_back(Compare::absent("/w/0"));
  t.success.emplace_back(PutRequest{.key = "/w/0", .value = "host", .lease = 7587862});
  t.success.emplace_back(RangeRequest{.key = "/w/0/hwm"});
  t.failure.emplace_back(DeleteRangeRequest{.key = "/w/", .range_end = "/w0", .prev_kv = true});
  EXPECT_EQ(encode(t),
            R"({"compare":[{"key":"L3cvMA==","target":"CREATE","result":"EQUAL",)"
            R"("create_revision":"0"}],"success":[{"request_put":{"key":"L3cvMA==",)"
            R"("value":"aG9zdA==","lease":"7587862"}},{"request_range":{"key":"L3cvMC9od20="}}],)"
            R"("failure":[{"request_delete_range":{"key":"L3cv","range_end":"L3cw",)"
            R"("prev_kv":true}}]})");
}

TEST(EtcdCodec, EncodesEveryCompareTargetWithItsOperandField) {
  struct Case {
    Compare compare;
    std::string_view json;
  };
  const Case cases[] = {
      {Compare::version("k", CompareResult::kGreater, 2),
       R"({"compare":[{"key":"aw==","target":"VERSION","result":"GREATER","version":"2"}],)"},
      {Compare::mod_revision("k", CompareResult::kLess, 9),
       R"({"compare":[{"key":"aw==","target":"MOD","result":"LESS","mod_revision":"9"}],)"},
      {Compare::create_revision("k", CompareResult::kNotEqual, 0),
       R"({"compare":[{"key":"aw==","target":"CREATE","result":"NOT_EQUAL","create_revision":"0"}],)"},
      {Compare::value_is("k", CompareResult::kEqual, "v"),
       R"({"compare":[{"key":"aw==","target":"VALUE","result":"EQUAL","value":"dg=="}],)"},
      {Compare::lease("k", CompareResult::kEqual, 5),
       R"({"compare":[{"key":"aw==","target":"LEASE","result":"EQUAL","lease":"5"}],)"},
  };
  for (const auto& c : cases) {
    TxnRequest t;
    t.compare.push_back(c.compare);
    EXPECT_EQ(encode(t), std::string(c.json) + R"("success":[],"failure":[]})");
  }
}

TEST(EtcdCodec, EncodesRangePutAndLeaseRequests) {
  EXPECT_EQ(encode(RangeRequest{.key = "/w/", .range_end = "/w0", .limit = 10, .keys_only = true}),
            R"({"key":"L3cv","range_end":"L3cw","limit":"10","keys_only":true})");
  // scan_last: the newest keys of a prefix, sorted on the server and limited there.
  EXPECT_EQ(encode(RangeRequest{.key = "/w/", .range_end = "/w0", .limit = 3, .descending = true}),
            R"({"key":"L3cv","range_end":"L3cw","limit":"3","sort_order":"DESCEND",)"
            R"("sort_target":"KEY"})");
  EXPECT_EQ(encode(PutRequest{.key = "k", .value = ""}), R"({"key":"aw==","value":""})");
  EXPECT_EQ(encode_lease_grant(10), R"({"TTL":"10"})");
  EXPECT_EQ(encode_lease_id(2324035720536360709), R"({"ID":"2324035720536360709"})");
}

// Replies captured from etcd 3.4.23 (Debian 12's etcd-server) with curl against /v3/...
constexpr std::string_view kTxnClaimed =
    R"({"header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952",)"
    R"("revision":"2","raft_term":"2"},"succeeded":true,"responses":[{"response_put":)"
    R"({"header":{"revision":"2"}}},{"response_range":{"header":{"revision":"2"}}}]})";
constexpr std::string_view kTxnTaken =
    R"({"header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952",)"
    R"("revision":"2","raft_term":"2"},"responses":[{"response_range":{"header":)"
    R"({"revision":"2"},"kvs":[{"key":"YQ==","create_revision":"2","mod_revision":"2",)"
    R"("version":"1","value":"eA==","lease":"2324035720536360711"}],"count":"1"}}]})";
constexpr std::string_view kKeepAlive =
    R"({"result":{"header":{"cluster_id":"324952591200643719","member_id":)"
    R"("3319814642761637952","revision":"2","raft_term":"2"},"ID":"2324035720536360711",)"
    R"("TTL":"5"}})";
constexpr std::string_view kKeepAliveExpired =
    R"({"result":{"header":{"cluster_id":"324952591200643719","member_id":)"
    R"("3319814642761637952","revision":"2","raft_term":"2"},"ID":"123"}})";
constexpr std::string_view kGrant =
    R"({"header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952",)"
    R"("revision":"1","raft_term":"2"},"ID":"2324035720536360709","TTL":"5"})";
constexpr std::string_view kDeleted =
    R"({"header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952",)"
    R"("revision":"3","raft_term":"2"},"succeeded":true,"responses":[{"response_delete_range":)"
    R"({"header":{"revision":"3"},"deleted":"1"}}]})";
constexpr std::string_view kLeaseNotFound =
    R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested )"
    R"(lease not found","code":5})";

TEST(EtcdCodec, DecodesASucceededTxnWithOneResponsePerOp) {
  auto r = decode_txn_response(kTxnClaimed);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->succeeded);
  EXPECT_EQ(r->header, (ResponseHeader{324952591200643719u, 3319814642761637952u, 2, 2}));
  ASSERT_EQ(r->responses.size(), 2u);
  EXPECT_EQ(std::get<PutResponse>(r->responses[0]).header.revision, 2);
  EXPECT_TRUE(std::get<RangeResponse>(r->responses[1]).kvs.empty());
}

TEST(EtcdCodec, DecodesAFailedTxnWhoseOmittedSucceededMeansFalse) {
  auto r = decode_txn_response(kTxnTaken);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_FALSE(r->succeeded);
  ASSERT_EQ(r->responses.size(), 1u);
  const auto& range = std::get<RangeResponse>(r->responses[0]);
  EXPECT_EQ(range.count, 1);
  ASSERT_EQ(range.kvs.size(), 1u);
  EXPECT_EQ(range.kvs[0], (KeyValue{.key = "a",
                                    .value = "x",
                                    .create_revision = 2,
                                    .mod_revision = 2,
                                    .version = 1,
                                    .lease = 2324035720536360711}));
}

TEST(EtcdCodec, DecodesDeleteRangeInsideATxn) {
  auto r = decode_txn_response(kDeleted);
  ASSERT_TRUE(r);
  EXPECT_EQ(std::get<DeleteRangeResponse>(r->responses.at(0)).deleted, 1);
}

TEST(EtcdCodec, DecodesLeaseGrantAndKeepAliveWhereAMissingTtlMeansExpired) {
  auto g = decode_lease_grant_response(kGrant);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->id, 2324035720536360709);
  EXPECT_EQ(g->ttl_s, 5);
  auto k = decode_lease_keepalive_response(kKeepAlive);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->ttl_s, 5);
  EXPECT_EQ(k->header.revision, 2);
  auto expired = decode_lease_keepalive_response(kKeepAliveExpired);
  ASSERT_TRUE(expired);
  EXPECT_EQ(expired->id, 123);
  EXPECT_EQ(expired->ttl_s, 0);
  // A keepalive reply must be wrapped in "result" (it is one message of a stream).
  EXPECT_FALSE(decode_lease_keepalive_response(kGrant));
}

TEST(EtcdCodec, DecodesGatewayErrors) {
  auto e = decode_gateway_error(kLeaseNotFound);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 5);
  EXPECT_EQ(e->message, "etcdserver: requested lease not found");
  EXPECT_FALSE(decode_gateway_error(kGrant));
  EXPECT_FALSE(decode_gateway_error("<html>"));
}

TEST(EtcdCodec, RejectsFieldsOfTheWrongType) {
  for (std::string_view bad : {
           R"({"header":{"revision":true}})",
           R"({"header":{"revision":"12x"}})",
           R"({"header":[]})",
           R"({"kvs":{}})",
           R"({"kvs":[{"key":"not base64!"}]})",
           R"({"count":1.5})",
           R"([])",
           R"(not json)",
       }) {
    auto r = decode_range_response(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error(), EtcdErrc::kBadResponse) << bad;
  }
  EXPECT_FALSE(decode_txn_response(R"({"succeeded":"yes"})"));
  EXPECT_FALSE(decode_txn_response(R"({"responses":[{"response_txn":{}}]})"));
  EXPECT_FALSE(decode_txn_response(R"({"responses":[{"response_put":{"prev_kv":7}}]})"));
}

// Lines of a watch stream, captured from etcd 3.4.23 with
// `curl -N http://127.0.0.1:23791/v3/watch -d
// '{"create_request":{"key":"L2s=","start_revision":"1"}}'` while `/k` was put, then deleted.
constexpr std::string_view kWatchCreated =
    R"({"result":{"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"1","raft_term":"2"},"created":true}})";
constexpr std::string_view kWatchPut =
    R"({"result":{"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"2","raft_term":"2"},"events":[{"kv":{"key":"L2s=","create_revision":"2","mod_revision":"2","version":"1","value":"dg=="}}]}})";
constexpr std::string_view kWatchDelete =
    R"({"result":{"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"3","raft_term":"2"},"events":[{"type":"DELETE","kv":{"key":"L2s=","mod_revision":"3"}}]}})";
// A watch whose start revision was compacted away (etcd 3.4 cancels it at once).
constexpr std::string_view kWatchCompacted =
    R"({"result":{"header":{"revision":"9"},"watch_id":"1","canceled":true,"compact_revision":"5","cancel_reason":"etcdserver: mvcc: required revision has been compacted"}})";
// An auth failure inside the stream, as the gateway writes a gRPC error of a streaming call.
constexpr std::string_view kStreamError =
    R"({"error":{"grpc_code":16,"http_code":401,"message":"etcdserver: invalid auth token","http_status":"Unauthorized"}})";

TEST(EtcdCodec, EncodesWatchCreateAndAuthenticateRequests) {
  EXPECT_EQ(encode(WatchCreateRequest{.key = "/k", .start_revision = 7}),
            R"({"create_request":{"key":"L2s=","start_revision":"7"}})");
  EXPECT_EQ(encode(WatchCreateRequest{.key = "/k", .range_end = "/l", .prev_kv = true}),
            R"({"create_request":{"key":"L2s=","range_end":"L2w=","prev_kv":true}})");
  EXPECT_EQ(encode_authenticate("ticketd", "s3\"cret"),
            R"({"name":"ticketd","password":"s3\"cret"})");
}

TEST(EtcdCodec, DecodesWatchStreamLinesWherePutIsTheOmittedType) {
  auto created = decode_watch_response(kWatchCreated);
  ASSERT_TRUE(created);
  EXPECT_TRUE(created->created);
  EXPECT_FALSE(created->canceled);
  EXPECT_EQ(created->header.revision, 1);
  EXPECT_TRUE(created->events.empty());

  auto put = decode_watch_response(kWatchPut);
  ASSERT_TRUE(put);
  EXPECT_FALSE(put->created);
  ASSERT_EQ(put->events.size(), 1u);
  EXPECT_EQ(put->events[0], (WatchEvent{WatchEvent::Type::kPut, KeyValue{.key = "/k",
                                                                         .value = "v",
                                                                         .create_revision = 2,
                                                                         .mod_revision = 2,
                                                                         .version = 1}}));
  auto del = decode_watch_response(kWatchDelete);
  ASSERT_TRUE(del);
  ASSERT_EQ(del->events.size(), 1u);
  EXPECT_EQ(del->events[0].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(del->events[0].kv.key, "/k");
  EXPECT_EQ(del->events[0].kv.mod_revision, 3);
  EXPECT_EQ(del->header.revision, 3);

  auto compacted = decode_watch_response(kWatchCompacted);
  ASSERT_TRUE(compacted);
  EXPECT_TRUE(compacted->canceled);
  EXPECT_EQ(compacted->compact_revision, 5);
  EXPECT_EQ(compacted->watch_id, 1);
  EXPECT_EQ(compacted->cancel_reason, "etcdserver: mvcc: required revision has been compacted");
}

TEST(EtcdCodec, WatchStreamErrorsAreNotResponsesButDecodeAsStreamErrors) {
  EXPECT_FALSE(decode_watch_response(kStreamError));
  auto e = decode_stream_error(kStreamError);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 16);
  EXPECT_EQ(e->message, "etcdserver: invalid auth token");
  EXPECT_FALSE(decode_stream_error(kWatchPut));
  EXPECT_FALSE(decode_watch_response(R"({"result":{"events":[{"type":"EXPIRE"}]}})"));
  EXPECT_FALSE(decode_watch_response(R"({"result":{"events":{}}})"));
  EXPECT_FALSE(decode_watch_response(R"({"result":{"cancel_reason":3}})"));
}

TEST(EtcdCodec, DecodesAuthenticateAndRefusesAReplyWithoutToken) {
  auto a =
      decode_authenticate_response(R"({"header":{"revision":"4"},"token":"kqYjjcHdSuWAGTDY.16"})");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->token, "kqYjjcHdSuWAGTDY.16");
  EXPECT_EQ(a->header.revision, 4);
  EXPECT_FALSE(decode_authenticate_response(R"({"header":{}})"));
  EXPECT_FALSE(decode_authenticate_response(R"({"token":5})"));
}

TEST(EtcdCodec, EveryStrictPrefixOfAReplyIsAnErrorNotACrash) {
  for (std::string_view reply : {kTxnClaimed, kTxnTaken, kKeepAlive, kGrant, kDeleted}) {
    for (std::size_t n = 0; n < reply.size(); ++n) {
      const auto prefix = reply.substr(0, n);
      EXPECT_FALSE(decode_txn_response(prefix)) << prefix;
      EXPECT_FALSE(decode_lease_keepalive_response(prefix)) << prefix;
      EXPECT_FALSE(decode_lease_grant_response(prefix)) << prefix;
    }
  }
  for (std::string_view line : {kWatchCreated, kWatchPut, kWatchDelete, kWatchCompacted}) {
    for (std::size_t n = 0; n < line.size(); ++n) {
      EXPECT_FALSE(decode_watch_response(line.substr(0, n))) << line.substr(0, n);
    }
  }
}

}  // namespace
}  // namespace ticketd::etcd
