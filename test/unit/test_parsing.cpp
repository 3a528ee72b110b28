// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE unit_parsing
#include <boost/test/unit_test.hpp>

#include "client/options_check.hpp"
#include "locks/adopt.hpp"
#include "connection/node_address.hpp"
#include "connection/resp.hpp"
#include "scripts/keys.hpp"
#include "scripts/script_call.hpp"

#include <redlock/error.hpp>

#include <openssl/sha.h>

#include <cstdio>

using namespace std::chrono_literals;
using redlock::errc;
namespace d = redlock::detail;

BOOST_AUTO_TEST_SUITE(uri)

BOOST_AUTO_TEST_CASE(full_uri) {
  std::string why;
  auto a = d::parse_node_uri("redis://alice:s3cret@db.example:6380/4", why);
  BOOST_REQUIRE(a);
  BOOST_TEST(!a->tls);
  BOOST_TEST(a->host == "db.example");
  BOOST_TEST(a->port == 6380);
  BOOST_TEST(a->user == "alice");
  BOOST_TEST(a->password == "s3cret");
  BOOST_TEST(a->db == 4);
  BOOST_TEST(a->display() == "redis://alice:***@db.example:6380/4");  // never the password
}

BOOST_AUTO_TEST_CASE(defaults_and_variants) {
  std::string why;
  auto a = d::parse_node_uri("redis://127.0.0.1", why);
  BOOST_REQUIRE(a);
  BOOST_TEST(a->port == 6379);
  BOOST_TEST(a->db == 0);
  BOOST_TEST(a->password.empty());
  auto b = d::parse_node_uri("rediss://:pw@[::1]:7000", why);
  BOOST_REQUIRE(b);
  BOOST_TEST(b->tls);
  BOOST_TEST(b->host == "::1");
  BOOST_TEST(b->user.empty());
  BOOST_TEST(b->password == "pw");
  auto c = d::parse_node_uri("redis://pw@h:1", why);  // lone userinfo = password
  BOOST_REQUIRE(c);
  BOOST_TEST(c->password == "pw");
  BOOST_TEST(c->user.empty());
  auto e = d::parse_node_uri("redis://u:p%40ss@h:1", why);  // percent-decoded
  BOOST_REQUIRE(e);
  BOOST_TEST(e->password == "p@ss");
}

BOOST_AUTO_TEST_CASE(bad_uris_name_the_problem) {
  struct bad {
    const char* uri;
    const char* mentions;
  } cases[] = {
      {"", "not a URI"},
      {"localhost:6379", "scheme"},
      {"http://h:1", "scheme 'http'"},
      {"redis://", "no host"},
      {"redis://h:0", "invalid port"},
      {"redis://h:70000", "invalid port"},
      {"redis://h:1/x", "invalid database"},
      {"redis://h:1/-1", "invalid database"},
      {"redis://h:1?db=2", "query"},
  };
  for (auto& c : cases) {
    std::string why;
    BOOST_TEST_CONTEXT(c.uri) {
      BOOST_TEST(!d::parse_node_uri(c.uri, why));
      BOOST_TEST(why.find(c.mentions) != std::string::npos, "message: " << why);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(options)

BOOST_AUTO_TEST_CASE(client_options_are_checked) {
  std::vector<d::node_address> addrs;
  redlock::client_options o;
  BOOST_TEST(d::check_client_options(o, addrs).code == errc::empty_node_list);
  o.nodes = {"redis://127.0.0.1:1", "nope"};
  auto r = d::check_client_options(o, addrs);
  BOOST_TEST(r.code == errc::bad_uri);
  BOOST_TEST(r.message.find("'nope'") != std::string::npos);
  o.nodes = {"redis://127.0.0.1:1"};
  o.drift_factor = 1.0;
  BOOST_TEST(d::check_client_options(o, addrs).code == errc::bad_drift_factor);
  o.drift_factor = -0.1;
  BOOST_TEST(d::check_client_options(o, addrs).code == errc::bad_drift_factor);
  o.drift_factor = 0.01;
  o.node_timeout = 0ms;
  BOOST_TEST(d::check_client_options(o, addrs).code == errc::node_timeout_too_large);
  o.node_timeout = 50ms;
  BOOST_TEST(!d::check_client_options(o, addrs));
  BOOST_TEST(addrs.size() == 1u);
}

BOOST_AUTO_TEST_CASE(acquire_options_are_checked) {
  redlock::acquire_options o;
  BOOST_TEST(d::check_acquire("", o, 50ms, "").code == errc::empty_name);
  o.ttl = 0ms;
  BOOST_TEST(d::check_acquire("r", o, 50ms, "").code == errc::bad_ttl);
  o.ttl = -5ms;
  BOOST_TEST(d::check_acquire("r", o, 50ms, "").code == errc::bad_ttl);
  o.ttl = 50ms;
  auto r = d::check_acquire("r", o, 50ms, "");
  BOOST_TEST(r.code == errc::node_timeout_too_large);
  BOOST_TEST(r.message.find("50 ms") != std::string::npos);
  o.ttl = 1000ms;
  o.min_validity = 1000ms;
  BOOST_TEST(d::check_acquire("r", o, 50ms, "").code == errc::bad_option);
  o.min_validity = 0ms;
  o.retry_delay = -1ms;
  BOOST_TEST(d::check_acquire("r", o, 50ms, "").code == errc::bad_option);
  o.retry_delay = 10ms;
  BOOST_TEST(!d::check_acquire("r", o, 50ms, ""));
}

// A name whose key is another lock's companion names no lock: R's scripts
// write and delete that key (a mutex named '{R}:holder' was freed under its
// holder by R's described acquisition and release). Every companion the key
// layout has, built by keys.hpp itself, is recognised; near misses are not.
BOOST_AUTO_TEST_CASE(a_name_that_is_another_locks_companion_is_refused) {
  namespace keys = d::keys;
  for (const std::string r : {"R", "", "a}:b", "{x}:permit:2", "app:R"}) {
    for (const auto& key : {keys::fence(r), keys::queue(r), keys::queue_deadlines(r), keys::queue_terms(r),
                            keys::wake_list(r), keys::wake_deadlines(r), keys::holder(r), keys::permit(r, 0),
                            keys::permit(r, 1023), keys::permits(r), keys::waiting_writer(r)}) {
      auto c = keys::companion_of(key);
      BOOST_TEST_REQUIRE(c.has_value(), key);
      BOOST_TEST(std::string(c->lock_key) == r, key);
      BOOST_TEST("{" + r + "}" + std::string(c->what) == key);
    }
  }
  for (std::string_view key : {"R", "{R}", "{R}:other", "{R}:fence:x", "R}:fence", "x{R}:fence", "{R}:permit:",
                               "{R}:permit:x", "{R}permit:1", "{R}:fence ", ":fence", "{R}:released", "{R}:leader"})
    BOOST_TEST(!keys::companion_of(key).has_value(), key);

  redlock::acquire_options o;
  auto r = d::check_acquire("{R}:holder", o, 50ms, "");
  BOOST_TEST(r.code == errc::bad_option);
  BOOST_TEST(r.message.find("'{R}:holder'") != std::string::npos, r.message);
  BOOST_TEST(r.message.find("key 'R'") != std::string::npos, r.message);
  // Under a key prefix the key is the prefix's: 'app:{R}:holder' is no one's.
  BOOST_TEST(!d::check_acquire("{R}:holder", o, 50ms, "app:"));
  BOOST_TEST(d::check_acquire("R}:holder", o, 50ms, "{").code == errc::bad_option);
  // Every name of a set is checked, and an adoption's name.
  o.other_names = {"x", "{x}:fence"};
  BOOST_TEST(d::check_acquire("y", o, 50ms, "").code == errc::bad_option);
  BOOST_TEST(d::check_adopt("{R}:permit:0", std::string(32, 'a'), 5000ms, {}, 50ms, "").code == errc::bad_option);
}

// A token names one hold, and its shape says which kind (docs/algorithm.md,
// section 16): an adoption whose kind the token cannot name is refused
// before anything is sent, naming the problem.
BOOST_AUTO_TEST_CASE(adopted_tokens_must_name_a_hold_of_their_kind) {
  using redlock::lock_kind;
  using d::token_shape;
  const std::string owner = "0123456789abcdef0123456789abcdef:job", plain = "0123456789abcdef0123456789abcdef";
  BOOST_TEST((d::shape_of(plain) == token_shape::plain));
  BOOST_TEST((d::shape_of(owner) == token_shape::owner_field));
  BOOST_TEST((d::shape_of("r:" + plain) == token_shape::read));
  BOOST_TEST((d::shape_of("w:" + plain) == token_shape::write));
  BOOST_TEST((d::shape_of("s:" + plain) == token_shape::set));
  BOOST_TEST((d::kind_of(token_shape::owner_field) == lock_kind::reentrant));
  BOOST_TEST((d::kind_of(token_shape::read) == lock_kind::read));
  auto check = [](const std::string& token, redlock::adopt_options how) {
    return d::check_adopt("r", token, 5000ms, how, 50ms, "");
  };
  BOOST_TEST(!check(plain, {}));
  BOOST_TEST(!check(owner, {}));
  BOOST_TEST(!check(owner, {.kind = lock_kind::fair}));
  BOOST_TEST(!check("r:" + plain, {}));
  BOOST_TEST(!check("s:" + plain, {.other_names = {"q"}}));
  BOOST_TEST(!check(plain, {.kind = lock_kind::semaphore, .permit = 1, .permits = 2}));
  // A reader's token as a reentrant owner (whose release deletes the hash).
  auto r = check("r:" + plain, {.kind = lock_kind::reentrant});
  BOOST_TEST(r.code == errc::bad_option);
  BOOST_TEST(r.message.find("reader") != std::string::npos, r.message);
  BOOST_TEST(check("r:" + plain, {.kind = lock_kind::write}).code == errc::bad_option);
  BOOST_TEST(check("w:" + plain, {.kind = lock_kind::mutex}).code == errc::bad_option);
  BOOST_TEST(check(plain, {.kind = lock_kind::read}).code == errc::bad_option);
  // A set's token with one name; `other_names` with a token that is not a set's.
  r = check("s:" + plain, {});
  BOOST_TEST(r.code == errc::bad_option);
  BOOST_TEST(r.message.find("several names") != std::string::npos, r.message);
  BOOST_TEST(check(plain, {.other_names = {"q"}}).code == errc::bad_option);
  BOOST_TEST(check("s:" + plain, {.other_names = {"r"}}).code == errc::bad_option);  // 'r' twice
  BOOST_TEST(check("s:" + plain, {.other_names = {""}}).code == errc::empty_name);
  // A permit without its slot or number of permits; a slot out of range.
  BOOST_TEST(check(plain, {.kind = lock_kind::semaphore}).code == errc::bad_option);
  BOOST_TEST(check(plain, {.kind = lock_kind::semaphore, .permit = 0}).code == errc::bad_option);
  BOOST_TEST(check(plain, {.kind = lock_kind::semaphore, .permit = 2, .permits = 2}).code == errc::bad_option);
  BOOST_TEST(check(plain, {.permit = 0, .permits = 2}).code == errc::bad_option);
  // The usual: a name, a token, a ttl above the node timeout.
  BOOST_TEST(d::check_adopt("", plain, 5000ms, {}, 50ms, "").code == errc::empty_name);
  BOOST_TEST(d::check_adopt("r", "", 5000ms, {}, 50ms, "").code == errc::bad_option);
  BOOST_TEST(d::check_adopt("r", plain, 50ms, {}, 50ms, "").code == errc::node_timeout_too_large);
}

// Issue 13, item 8. A fair waiter's place in line expires queue_timeout after
// its last poll ran on the master. Two polls can run as far apart as two node
// timeouts (the first answered at once, the next one at its deadline) plus
// the longest delay between them: retry_delay + retry_jitter for the head,
// the rank back-off for waiters further back. A shorter queue_timeout drops
// the waiter between its own polls.
BOOST_AUTO_TEST_CASE(fair_queue_timeout_must_exceed_the_longest_gap_between_polls) {
  redlock::acquire_options o;
  o.kind = redlock::lock_kind::fair;
  o.ttl = 5000ms;
  o.retry_delay = 100ms;
  o.retry_jitter = 50ms;
  o.queue_timeout = 200ms;  // > delay + jitter and > node timeout, but polls may be 250 ms apart
  auto r = d::check_acquire("r", o, 50ms, "");
  BOOST_TEST(r.code == errc::bad_option);
  BOOST_TEST(r.message.find("250 ms") != std::string::npos, r.message);
  o.queue_timeout = 260ms;
  BOOST_TEST(!d::check_acquire("r", o, 50ms, ""), d::check_acquire("r", o, 50ms, "").message);
  // Waiters behind others poll less often: up to a third of queue_timeout
  // apart here, which with two node timeouts is more than 140 ms.
  o.retry_delay = 10ms;
  o.retry_jitter = 5ms;
  o.queue_timeout = 140ms;
  BOOST_TEST(d::check_acquire("r", o, 50ms, "").code == errc::bad_option);
  o.queue_timeout = 160ms;
  BOOST_TEST(!d::check_acquire("r", o, 50ms, ""), d::check_acquire("r", o, 50ms, "").message);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(replies)

BOOST_AUTO_TEST_CASE(encoder_writes_resp_arrays) {
  std::string out;
  d::append_command(out, {"SET", "k", "a b"});
  BOOST_TEST(out == "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na b\r\n");
}

namespace {
// hiredis's own formatter: the oracle for ours.
std::string hiredis_encoding(const std::vector<std::string>& argv) {
  std::vector<const char*> ptrs;
  std::vector<std::size_t> lens;
  for (auto& a : argv) ptrs.push_back(a.data()), lens.push_back(a.size());
  sds encoded = nullptr;
  int n = redisFormatSdsCommandArgv(&encoded, static_cast<int>(argv.size()), ptrs.data(), lens.data());
  BOOST_REQUIRE(n >= 0);
  std::string out(encoded, static_cast<std::size_t>(n));
  redisFreeSdsCommand(encoded);
  return out;
}

// Words whose lengths cross every digit count the headers use, an empty
// one, and bytes RESP must carry through (CR, LF, NUL).
std::vector<std::string> awkward_words() {
  std::vector<std::string> words{"EVALSHA", "", std::string("a\r\nb\0c", 7), std::string(9, 'x'),
                                 std::string(10, 'y'), std::string(99, 'z'), std::string(100, 'w'),
                                 std::string(123456, 'v')};
  for (int i = 0; i < 5; ++i) words.push_back(std::to_string(i));  // 13 words: a two-digit count
  return words;
}
}  // namespace

BOOST_AUTO_TEST_CASE(encoder_matches_hiredis_on_awkward_words) {
  auto words = awkward_words();
  for (std::size_t n = 0; n <= words.size(); ++n) {
    std::vector<std::string> argv(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(n));
    std::string ours = "already here";
    d::append_command(ours, argv);
    BOOST_TEST(ours == "already here" + hiredis_encoding(argv), n << " words");
  }
}

BOOST_AUTO_TEST_CASE(a_word_of_pieces_is_encoded_as_the_pieces_joined) {
  std::string ours;
  d::append_command(ours, {"GET", d::word("{", "lock", "}", ":wake")});
  BOOST_TEST(ours == hiredis_encoding({"GET", "{lock}:wake"}));
  BOOST_TEST(d::word("{", "lock", "}", ":wake").str() == "{lock}:wake");
}

BOOST_AUTO_TEST_CASE(a_script_call_and_its_body_fallback_match_hiredis) {
  auto words = awkward_words();
  std::vector<std::string> keys(words.begin(), words.begin() + 3), args(words.begin() + 3, words.end());
  for (const d::script* s : {&d::scripts::mutex_release, &d::scripts::status}) {
    d::script_call call(*s, keys, args);
    std::vector<std::string> evalsha{"EVALSHA", std::string(s->sha1), "3"}, eval{"EVAL", std::string(s->body), "3"};
    for (auto* argv : {&evalsha, &eval}) {
      argv->insert(argv->end(), keys.begin(), keys.end());
      argv->insert(argv->end(), args.begin(), args.end());
    }
    BOOST_TEST(call.evalsha() == hiredis_encoding(evalsha), s->name);
    BOOST_TEST(call.eval() == hiredis_encoding(eval), s->name);
  }
  // No keys, no arguments.
  d::script_call bare(d::scripts::status, std::vector<std::string>{}, std::vector<std::string>{});
  BOOST_TEST(bare.eval() == hiredis_encoding({"EVAL", std::string(d::scripts::status.body), "0"}));
}

BOOST_AUTO_TEST_CASE(reader_parses_pipelined_and_split_replies) {
  d::reply_reader r(1 << 20, 1024);
  boost::system::error_code ec;
  std::string stream = "+OK\r\n:42\r\n$-1\r\n*2\r\n$1\r\na\r\n:7\r\n-ERR boom\r\n";
  // Fed one byte at a time: replies come out whole and in order.
  std::vector<int> types;
  for (char c : stream) {
    r.feed(&c, 1);
    while (auto reply = r.next(ec)) types.push_back(reply->type);
    BOOST_REQUIRE(!ec);
  }
  BOOST_TEST(types == (std::vector<int>{REDIS_REPLY_STATUS, REDIS_REPLY_INTEGER, REDIS_REPLY_NIL, REDIS_REPLY_ARRAY,
                                         REDIS_REPLY_ERROR}),
             boost::test_tools::per_element());
}

// Replies come from a pool that recycles nodes and their buffers: a reply
// parsed after a longer, a shorter or a nested one must read exactly as sent.
BOOST_AUTO_TEST_CASE(recycled_replies_read_as_sent) {
  d::reply_reader r(1 << 20, 1024);
  boost::system::error_code ec;
  auto parse = [&](const std::string& wire) {
    r.feed(wire.data(), wire.size());
    auto reply = r.next(ec);
    BOOST_REQUIRE(!ec);
    BOOST_REQUIRE(reply);
    return reply;
  };
  std::string long_text(5000, 'x');  // over what the pool keeps: freed, not kept
  for (int round = 0; round < 3; ++round) {
    {
      auto a = parse("$5000\r\n" + long_text + "\r\n");
      BOOST_TEST(a->type == REDIS_REPLY_STRING);
      BOOST_TEST(d::reply_text(*a) == long_text);
    }
    {
      auto a = parse("$11\r\nhello world\r\n");
      BOOST_TEST(d::reply_text(*a) == "hello world");
      BOOST_TEST(a->str[a->len] == '\0');
    }
    {
      auto a = parse("+OK\r\n");
      BOOST_TEST(a->type == REDIS_REPLY_STATUS);
      BOOST_TEST(d::reply_text(*a) == "OK");
    }
    {
      // message, channel, [nested array with a nil and an integer], error
      auto a = parse("*4\r\n$7\r\nmessage\r\n$2\r\nch\r\n*3\r\n$-1\r\n:-7\r\n$0\r\n\r\n-ERR no\r\n");
      BOOST_REQUIRE(a->type == REDIS_REPLY_ARRAY);
      BOOST_REQUIRE(a->elements == 4u);
      BOOST_TEST(d::reply_text(*a->element[0]) == "message");
      BOOST_TEST(d::reply_text(*a->element[1]) == "ch");
      auto* inner = a->element[2];
      BOOST_REQUIRE(inner->type == REDIS_REPLY_ARRAY);
      BOOST_REQUIRE(inner->elements == 3u);
      BOOST_TEST(inner->element[0]->type == REDIS_REPLY_NIL);
      BOOST_TEST(inner->element[1]->type == REDIS_REPLY_INTEGER);
      BOOST_TEST(inner->element[1]->integer == -7);
      BOOST_TEST(inner->element[2]->type == REDIS_REPLY_STRING);
      BOOST_TEST(inner->element[2]->len == 0u);
      BOOST_TEST(a->element[3]->type == REDIS_REPLY_ERROR);
      BOOST_TEST(d::reply_text(*a->element[3]) == "ERR no");
    }
    {
      auto a = parse(":42\r\n");
      BOOST_TEST(a->type == REDIS_REPLY_INTEGER);
      BOOST_TEST(a->integer == 42);
      BOOST_TEST(a->elements == 0u);
      BOOST_TEST(!a->element);
      BOOST_TEST(!a->str);
    }
    {
      auto a = parse("*0\r\n");
      BOOST_TEST(a->type == REDIS_REPLY_ARRAY);
      BOOST_TEST(a->elements == 0u);
    }
  }
}

// A connection may reset its reader (a callback closed it) while a reply is
// still in hand, and a reader may go with a half-parsed reply in it: neither
// may free what is still used, nor leak (the sanitized build checks both).
BOOST_AUTO_TEST_CASE(a_reply_outlives_its_reader_and_a_partial_reply_is_freed) {
  boost::system::error_code ec;
  d::reply_ptr kept;
  {
    d::reply_reader r(1 << 20, 1024);
    std::string wire = "*2\r\n$3\r\nabc\r\n:1\r\n";
    r.feed(wire.data(), wire.size());
    kept = r.next(ec);
    BOOST_REQUIRE(kept);
    r.reset();
    std::string partial = "*3\r\n$3\r\nabc\r\n:1\r\n";  // one element short
    r.feed(partial.data(), partial.size());
    BOOST_TEST(!r.next(ec));
    BOOST_TEST(!ec);
  }
  BOOST_REQUIRE(kept->elements == 2u);
  BOOST_TEST(d::reply_text(*kept->element[0]) == "abc");
  BOOST_TEST(kept->element[1]->integer == 1);
  kept.reset();  // the pool goes with its last reply
}

BOOST_AUTO_TEST_CASE(reader_caps_arrays_and_sizes) {
  boost::system::error_code ec;
  d::reply_reader small_arrays(1 << 20, 16);
  std::string big = "*17\r\n";
  small_arrays.feed(big.data(), big.size());
  BOOST_TEST(!small_arrays.next(ec));
  BOOST_TEST(ec == errc::reply_too_large);

  ec.clear();
  d::reply_reader small_bytes(1024, 16);
  std::string bulk = "$100000\r\n" + std::string(5000, 'x');
  small_bytes.feed(bulk.data(), bulk.size());
  BOOST_TEST(!small_bytes.next(ec));
  BOOST_TEST(ec == errc::reply_too_large);

  ec.clear();
  d::reply_reader garbage(1 << 20, 16);
  garbage.feed("?what\r\n", 7);
  BOOST_TEST(!garbage.next(ec));
  BOOST_TEST(ec == errc::protocol_error);
}

BOOST_AUTO_TEST_CASE(error_replies_map_to_codes) {
  BOOST_TEST(d::classify_error_reply("OOM command not allowed when used memory > 'maxmemory'.") ==
             errc::out_of_memory);
  BOOST_TEST(d::classify_error_reply("READONLY You can't write against a read only replica.") == errc::read_only);
  BOOST_TEST(d::classify_error_reply("WRONGTYPE Operation against a key holding the wrong kind of value") ==
             errc::wrong_type);
  BOOST_TEST(d::classify_error_reply("NOAUTH Authentication required.") == errc::auth_failed);
  BOOST_TEST(d::classify_error_reply("WRONGPASS invalid username-password pair or user is disabled.") ==
             errc::auth_failed);
  BOOST_TEST(d::classify_error_reply("ERR user_script:12: WRONGTYPE lock key holds a hash") == errc::wrong_type);
  // What a script's INCR of a fence counter holding text answers (Redis 7.0).
  BOOST_TEST(d::classify_error_reply("ERR value is not an integer or out of range script: 6160, on @user_script:36.") ==
             errc::wrong_type);
  BOOST_TEST(d::classify_error_reply("ERR unknown command") == errc::server_error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(embedded_scripts_carry_their_sha1) {
  BOOST_TEST(d::scripts::all.size() >= 6u);
  for (const d::script* s : d::scripts::all) {
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(s->body.data()), s->body.size(), digest);
    char hex[2 * SHA_DIGEST_LENGTH + 1];
    for (int i = 0; i < SHA_DIGEST_LENGTH; ++i) std::snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    BOOST_TEST_CONTEXT(s->name) { BOOST_TEST(std::string_view(hex) == s->sha1); }
  }
}
