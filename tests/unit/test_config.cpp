// SPDX-License-Identifier: BSL-1.0
#include <redlock/config.hpp>
#include <redlock/error.hpp>

#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace std::string_literals;
using redlock::config;
using redlock::node;

namespace {

// The what() of the invalid_argument that from_url(url) must throw.
std::string rejection(std::string_view url)
{
    try {
        node::from_url(url);
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == redlock::error::invalid_argument), e.code().message());
        return e.what();
    }
    BOOST_ERROR("'" << url << "' was accepted");
    return {};
}

bool contains(std::string_view text, std::string_view part)
{
    return text.find(part) != std::string_view::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(node_urls)

BOOST_AUTO_TEST_CASE(host_port_and_db)
{
    node n = node::from_url("redis://example.com:7000/3");
    BOOST_TEST(n.host == "example.com");
    BOOST_TEST(n.port == 7000);
    BOOST_TEST(n.db == 3);
    BOOST_TEST(!n.tls);
    BOOST_TEST(n.unix_path.empty());
    BOOST_TEST(n.username.empty());
    BOOST_TEST(n.password.empty());
}

BOOST_AUTO_TEST_CASE(default_port_and_db)
{
    node n = node::from_url("redis://example.com");
    BOOST_TEST(n.host == "example.com");
    BOOST_TEST(n.port == 6379);
    BOOST_TEST(n.db == 0);
    BOOST_TEST(node::from_url("redis://example.com/").db == 0);
}

BOOST_AUTO_TEST_CASE(user_and_password)
{
    node n = node::from_url("redis://alice:s3cr3t@example.com:6380");
    BOOST_TEST(n.username == "alice");
    BOOST_TEST(n.password == "s3cr3t");
    BOOST_TEST(n.host == "example.com");
    BOOST_TEST(n.port == 6380);
}

BOOST_AUTO_TEST_CASE(password_only)
{
    node n = node::from_url("redis://:s3cr3t@example.com");
    BOOST_TEST(n.username.empty());
    BOOST_TEST(n.password == "s3cr3t");
}

BOOST_AUTO_TEST_CASE(user_only)
{
    node n = node::from_url("redis://alice@example.com");
    BOOST_TEST(n.username == "alice");
    BOOST_TEST(n.password.empty());
}

BOOST_AUTO_TEST_CASE(percent_decoding_of_credentials)
{
    node n = node::from_url("redis://al%40ice:p%3Aw%2F%25%3f@example.com");
    BOOST_TEST(n.username == "al@ice");
    BOOST_TEST(n.password == "p:w/%?");
    BOOST_TEST(n.host == "example.com");
}

BOOST_AUTO_TEST_CASE(ipv6_host_in_brackets)
{
    node n = node::from_url("redis://[::1]:7000");
    BOOST_TEST(n.host == "::1");
    BOOST_TEST(n.port == 7000);
    BOOST_TEST(n.endpoint() == "[::1]:7000");
    BOOST_TEST(node::from_url("redis://:s3cr3t@[fe80::1]/2").host == "fe80::1");
    BOOST_TEST(node::from_url("redis://[::1]").port == 6379);
}

BOOST_AUTO_TEST_CASE(a_sentinel_url_names_its_sentinels_and_master)
{
    node n =
        node::from_url("redis-sentinel://:s3cr3t@10.0.0.1,10.0.0.2:5000,[::1]/my%2Dmaster?db=2");
    BOOST_TEST_REQUIRE(n.sentinels.size() == 3u);
    BOOST_TEST(n.sentinels[0].host == "10.0.0.1");
    BOOST_TEST(n.sentinels[0].port == 26379);  // the Sentinels' default port
    BOOST_TEST(n.sentinels[1].port == 5000);
    BOOST_TEST(n.sentinels[2].host == "::1");
    BOOST_TEST(n.master_name == "my-master");
    BOOST_TEST(n.password == "s3cr3t");
    BOOST_TEST(n.db == 2);
    BOOST_TEST(!n.tls);
    BOOST_TEST(n.endpoint() ==
               "redis-sentinel://10.0.0.1:26379,10.0.0.2:5000,[::1]:26379/my-master");
    BOOST_TEST(node::from_url("rediss-sentinel://h/m").tls);
    BOOST_TEST(redlock::validate(redlock::config{.nodes = {n}}) == "");
}

BOOST_AUTO_TEST_CASE(a_cluster_url_lists_its_seeds)
{
    const node n = node::from_url("redis-cluster://app:s3cr3t@10.0.0.1:7000,10.0.0.2,[::1]:7002");
    BOOST_TEST_REQUIRE(n.cluster_seeds.size() == 3u);
    BOOST_TEST(n.cluster_seeds[0].host == "10.0.0.1");
    BOOST_TEST(n.cluster_seeds[0].port == 7000);
    BOOST_TEST(n.cluster_seeds[1].port == 6379);  // Redis's default port
    BOOST_TEST(n.cluster_seeds[2].host == "::1");
    BOOST_TEST(n.username == "app");
    BOOST_TEST(n.password == "s3cr3t");
    BOOST_TEST(!n.tls);
    BOOST_TEST(n.sentinels.empty());
    BOOST_TEST(n.endpoint() == "redis-cluster://10.0.0.1:7000,10.0.0.2:6379,[::1]:7002");
    BOOST_TEST(node::from_url("rediss-cluster://h:7000").tls);
    BOOST_TEST(node::from_url("REDIS-CLUSTER://h:7000/").cluster_seeds.size() == 1u);
    const config cfg = config::from_urls({"redis-cluster://127.0.0.1:7000"});
    BOOST_TEST(cfg.nodes.size() == 1u);  // one deployment, one node of the quorum
    BOOST_TEST(validate(cfg).empty());
}

BOOST_AUTO_TEST_CASE(a_list_of_node_urls_splits_where_a_scheme_follows_a_comma)
{
    const auto urls = redlock::split_node_urls(
        "redis://a:1,redis-cluster://b:2,c:3,rediss-sentinel://d,e/m,unix:///s");
    BOOST_TEST_REQUIRE(urls.size() == 4u);
    BOOST_TEST(urls[0] == "redis://a:1");
    BOOST_TEST(urls[1] == "redis-cluster://b:2,c:3");
    BOOST_TEST(urls[2] == "rediss-sentinel://d,e/m");
    BOOST_TEST(urls[3] == "unix:///s");
    // Empty pieces are kept for the caller to report; a comma before a host stays.
    BOOST_TEST(redlock::split_node_urls("redis://a,,redis://b").size() == 3u);
    BOOST_TEST(redlock::split_node_urls("redis://a,").back().empty());
    BOOST_TEST(redlock::split_node_urls("redis://a:1,b:2").size() == 1u);
    BOOST_TEST(redlock::split_node_urls("").size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_cluster_url_with_a_database_or_bad_seeds_is_rejected)
{
    BOOST_TEST(contains(rejection("redis-cluster://a:7000/2"), "only database 0"));
    BOOST_TEST(contains(rejection("redis-cluster://a:7000?db=1"), "only database 0"));
    BOOST_TEST(contains(rejection("redis-cluster://a,,b"), "missing host"));
    BOOST_TEST(contains(rejection("redis-cluster://a:0"), "port"));
    BOOST_TEST(contains(rejection("redis-clustr://a:7000"), "redis-cluster"));
    config cfg = config::from_urls({"redis-cluster://a:7000"});
    cfg.nodes[0].db = 3;
    BOOST_TEST(contains(validate(cfg), "only database 0"));
    cfg.nodes[0].db = 0;
    cfg.nodes[0].sentinels.push_back({"s", 26379});
    cfg.nodes[0].master_name = "m";
    BOOST_TEST(contains(validate(cfg), "both Sentinels and cluster seeds"));
    cfg = config::from_urls({"redis-cluster://a:7000"});
    cfg.nodes[0].cluster_seeds.push_back({"", 7001});
    BOOST_TEST(contains(validate(cfg), "seed with no host"));
}

BOOST_AUTO_TEST_CASE(a_sentinel_url_without_a_master_name_or_with_bad_hosts_is_rejected)
{
    BOOST_TEST(contains(rejection("redis-sentinel://127.0.0.1:26379"), "names the master"));
    BOOST_TEST(contains(rejection("redis-sentinel://127.0.0.1:26379/"), "names the master"));
    BOOST_TEST(contains(rejection("redis-sentinel://a,,b/m"), "missing host"));
    BOOST_TEST(contains(rejection("redis-sentinel://a:0/m"), "port"));
    BOOST_TEST(contains(rejection("redis-sentinel://a/m?x=1"), "only db=N"));
    BOOST_TEST(contains(rejection("redis-sentinel://a/m%0a"), "master name"));
    // Sentinels announce failovers as space-separated words.
    BOOST_TEST(contains(rejection("redis-sentinel://a/my%20master"), "master name"));
    // Only Sentinel and cluster URLs list several hosts.
    BOOST_TEST(contains(rejection("redis://a:1,b:2"), "a comma in the host"));
    node n = node::from_url("redis-sentinel://a/m");
    n.master_name.clear();
    BOOST_TEST(contains(redlock::validate(redlock::config{.nodes = {n}}), "no master_name"));
}

BOOST_AUTO_TEST_CASE(rediss_sets_tls)
{
    node n = node::from_url("rediss://example.com:6390");
    BOOST_TEST(n.tls);
    BOOST_TEST(n.port == 6390);
}

BOOST_AUTO_TEST_CASE(unix_socket)
{
    node n = node::from_url("unix:///run/redis/redis.sock");
    BOOST_TEST(n.unix_path == "/run/redis/redis.sock");
    BOOST_TEST(n.host.empty());
    BOOST_TEST(n.db == 0);
    BOOST_TEST(n.endpoint() == "unix:/run/redis/redis.sock");
}

BOOST_AUTO_TEST_CASE(unix_socket_with_db_and_password)
{
    node n = node::from_url("unix://:s3cr3t@/tmp/redis.sock?db=3");
    BOOST_TEST(n.unix_path == "/tmp/redis.sock");
    BOOST_TEST(n.db == 3);
    BOOST_TEST(n.password == "s3cr3t");
}

BOOST_AUTO_TEST_CASE(unix_socket_path_may_contain_an_at_sign)
{
    node n = node::from_url("unix:///tmp/app@1/redis.sock");
    BOOST_TEST(n.unix_path == "/tmp/app@1/redis.sock");
    BOOST_TEST(n.password.empty());
}

BOOST_AUTO_TEST_CASE(scheme_is_case_insensitive)
{
    node n = node::from_url("REDIS://example.com:7000");
    BOOST_TEST(n.host == "example.com");
    BOOST_TEST(n.port == 7000);
    BOOST_TEST(!n.tls);
}

struct bad_url
{
    std::string url;
    std::string problem;  // a part of the message that says what is wrong
};

BOOST_AUTO_TEST_CASE(malformed_urls_are_rejected_without_the_password)
{
    const std::vector<bad_url> cases = {
        {"localhost:6379", "expected redis://"},
        {"http://:s3cr3t@example.com", "unsupported scheme 'http'"},
        {"redis://:s3cr3t@", "missing host"},
        {"redis://:s3cr3t@:6379", "missing host"},
        {"redis://:6379", "missing host"},
        {"redis://:s3cr3t@example.com:0", "port '0'"},
        {"redis://:s3cr3t@example.com:65536", "port '65536'"},
        {"redis://:s3cr3t@example.com:abc", "port 'abc'"},
        {"redis://:s3cr3t@example.com:", "port ''"},
        {"redis://:s3cr3t@example.com/abc", "database 'abc'"},
        {"redis://:s3cr3t@example.com/-1", "database '-1'"},
        {"redis://:s3cr%zzt@example.com", "bad percent-escape in the password"},
        {"redis://:s3cr3t%4@example.com", "bad percent-escape in the password"},
        {"redis://al%g1ce:s3cr3t@example.com", "bad percent-escape in the user name"},
        {"redis://:s3cr3t@example.com?db=2", "unexpected query 'db=2'"},
        {"unix://:s3cr3t@/tmp/redis.sock?foo=1", "unknown query 'foo=1'"},
        {"unix://:s3cr3t@/tmp/redis.sock?db=x", "database 'x'"},
        {"unix://:s3cr3t@tmp/redis.sock", "absolute path"},
        {"redis://:s3cr3t@[::1", "unclosed '['"},
        {"redis://:s3cr3t@[::1]x", "unexpected 'x'"},
        {"redis://:s3cr3t@::1:6379", "put an IPv6 host in brackets"},
        {"redis://:s3cr3t@fe80::1/2", "put an IPv6 host in brackets"},
    };
    for (const bad_url& c : cases) {
        BOOST_TEST_CONTEXT(c.url)
        {
            std::string what = rejection(c.url);
            BOOST_TEST(contains(what, c.problem), what);
            BOOST_TEST(!contains(what, "s3cr3t"), what);
        }
    }
}

// Without "://" the message cannot tell the scheme from the credentials: everything before
// the last '@' is hidden.
BOOST_AUTO_TEST_CASE(missing_scheme_message_hides_the_password)
{
    for (std::string_view url :
         {"alice:s3cr3t@example.com:6379", ":s3cr3t@example.com", "redis:/:s3cr3t@example.com"}) {
        BOOST_TEST_CONTEXT(url)
        {
            std::string what = rejection(url);
            BOOST_TEST(contains(what, "expected redis://"), what);
            BOOST_TEST(!contains(what, "s3cr3t"), what);
        }
    }
}

BOOST_AUTO_TEST_CASE(unprintable_bytes_are_escaped_in_messages)
{
    // A NUL in the port, a newline in the query, an escape in the scheme.
    const std::string urls[] = {
        "redis://example.com:63\0"
        "79"s,
        "redis://h:1?a\nb"s, "re\x1b[2Jdis://h:1"s, "redis://h:1/\x7f"s};
    for (const std::string& url : urls) {
        const std::string what = rejection(url);
        BOOST_TEST_CONTEXT(what)
        {
            for (char ch : what) {
                const auto byte = static_cast<unsigned char>(ch);
                BOOST_TEST((byte >= 0x20 && byte != 0x7f));
            }
        }
    }
    BOOST_TEST(contains(rejection("redis://example.com:63\0"
                                  "79"s),
                        "63\\x0079"));
    // Escaping never uncovers a hidden password.
    BOOST_TEST(!contains(rejection("redis://:s3cr3t@h:1\n"s), "s3cr3t"));
}

BOOST_AUTO_TEST_CASE(hosts_with_spaces_or_control_characters_are_rejected)
{
    std::string what = rejection("redis://exa mple:1");
    BOOST_TEST(contains(what, "the host 'exa mple' contains a space"), what);
    what = rejection(std::string("redis://exa\tmple:1"));
    BOOST_TEST(contains(what, "the host 'exa\\x09mple' contains a control character"), what);
    what = rejection("rediss://exa\0mple"s);
    BOOST_TEST(contains(what, "the host 'exa\\x00mple' contains a control character"), what);
    BOOST_TEST(!contains(what, std::string_view("\0", 1)));
    // Bracketed IPv6 hosts are checked too.
    BOOST_TEST(contains(rejection("redis://[::1 ]:1"), "contains a space"));
}

BOOST_AUTO_TEST_CASE(endpoint_forms_carry_no_credentials)
{
    node n;
    BOOST_TEST(n.endpoint() == "127.0.0.1:6379");
    n.host = "example.com";
    n.port = 7001;
    n.password = "s3cr3t";
    BOOST_TEST(n.endpoint() == "example.com:7001");
    n.host = "fe80::1";
    BOOST_TEST(n.endpoint() == "[fe80::1]:7001");
    n.unix_path = "/tmp/r.sock";  // takes precedence over host and port
    BOOST_TEST(n.endpoint() == "unix:/tmp/r.sock");
    BOOST_TEST(node::from_url("redis://alice:s3cr3t@example.com:7002/5").endpoint() ==
               "example.com:7002");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(config_validation)

BOOST_AUTO_TEST_CASE(from_urls_keeps_order)
{
    config cfg = config::from_urls({"redis://a:7001", "redis://b:7002/1", "unix:///tmp/c.sock"});
    BOOST_TEST_REQUIRE(cfg.nodes.size() == 3u);
    BOOST_TEST(cfg.nodes[0].endpoint() == "a:7001");
    BOOST_TEST(cfg.nodes[1].endpoint() == "b:7002");
    BOOST_TEST(cfg.nodes[1].db == 1);
    BOOST_TEST(cfg.nodes[2].endpoint() == "unix:/tmp/c.sock");
    BOOST_TEST(redlock::validate(cfg) == "");
    BOOST_TEST((cfg.connect_timeout == config{}.connect_timeout));

    std::vector<std::string> urls = {"redis://a:7001", "redis://a:7002"};
    config from_vector = config::from_urls(urls);
    BOOST_TEST_REQUIRE(from_vector.nodes.size() == 2u);
    BOOST_TEST(from_vector.nodes[1].port == 7002);
}

BOOST_AUTO_TEST_CASE(from_urls_rejects_a_malformed_url)
{
    BOOST_CHECK_EXCEPTION(
        config::from_urls({"redis://a:7001", "redis://b:x"}), boost::system::system_error,
        [](const auto& e) { return e.code() == redlock::error::invalid_argument; });
    BOOST_CHECK_THROW(config::from_urls(std::vector<std::string>{"nope"}),
                      boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(empty_nodes_are_rejected)
{
    std::string problem = redlock::validate(config{});
    BOOST_TEST(contains(problem, "config.nodes is empty"), problem);
}

BOOST_AUTO_TEST_CASE(duplicate_endpoint_is_rejected)
{
    std::string problem = redlock::validate(
        config::from_urls({"redis://a:7001", "redis://b:7001", "redis://a:7001"}));
    BOOST_TEST(contains(problem, "config.nodes[2]"), problem);
    BOOST_TEST(contains(problem, "a:7001"), problem);
    BOOST_TEST(contains(problem, "repeats"), problem);
}

BOOST_AUTO_TEST_CASE(same_server_with_another_db_is_a_duplicate)
{
    std::string problem =
        redlock::validate(config::from_urls({"redis://a:7001/0", "redis://a:7001/2"}));
    BOOST_TEST(contains(problem, "config.nodes[1]"), problem);
    BOOST_TEST(contains(problem, "repeats"), problem);
    problem =
        redlock::validate(config::from_urls({"unix:///tmp/r.sock", "unix:///tmp/r.sock?db=1"}));
    BOOST_TEST(contains(problem, "repeats"), problem);
}

BOOST_AUTO_TEST_CASE(tls_nodes_are_accepted_and_client_certificates_go_in_pairs)
{
    config cfg = config::from_urls({"rediss://:s3cr3t@a:7001"});
    BOOST_TEST(redlock::validate(cfg).empty());
    cfg.tls.cert_file = "client.crt";
    std::string problem = redlock::validate(cfg);
    BOOST_TEST(contains(problem, "config.tls.cert_file"), problem);
    BOOST_TEST(contains(problem, "config.tls.key_file"), problem);
    cfg.tls.key_file = "client.key";
    BOOST_TEST(redlock::validate(cfg).empty());
}

BOOST_AUTO_TEST_CASE(unusable_node_fields_are_rejected)
{
    auto problem_with = [](auto change) {
        config cfg;
        cfg.nodes.resize(1);
        change(cfg.nodes[0]);
        return redlock::validate(cfg);
    };
    BOOST_TEST(contains(problem_with([](node& n) { n.host.clear(); }), "neither a host"));
    BOOST_TEST(contains(problem_with([](node& n) { n.port = 0; }), "port 0"));
    BOOST_TEST(contains(problem_with([](node& n) { n.db = -1; }), "negative database"));
    const std::string spaced = problem_with([](node& n) { n.host = "exa mple"; });
    BOOST_TEST(contains(spaced, "config.nodes[0]: the host 'exa mple' contains a space"), spaced);
    const std::string nul = problem_with([](node& n) { n.host = std::string("a\0b", 3); });
    BOOST_TEST(contains(nul, "'a\\x00b' contains a control character"), nul);
}

BOOST_AUTO_TEST_CASE(connect_timeout_must_be_positive)
{
    config cfg = config::from_urls({"redis://a:7001"});
    cfg.connect_timeout = 0ms;
    BOOST_TEST(contains(redlock::validate(cfg), "config.connect_timeout"));
    cfg.connect_timeout = -1ms;
    BOOST_TEST(contains(redlock::validate(cfg), "config.connect_timeout"));
}

BOOST_AUTO_TEST_CASE(reconnect_backoff_must_be_ordered)
{
    config cfg = config::from_urls({"redis://a:7001"});
    cfg.reconnect_backoff_min = 500ms;
    cfg.reconnect_backoff_max = 100ms;
    BOOST_TEST(contains(redlock::validate(cfg), "config.reconnect_backoff_min"));
    cfg.reconnect_backoff_min = -1ms;
    cfg.reconnect_backoff_max = 100ms;
    BOOST_TEST(contains(redlock::validate(cfg), "config.reconnect_backoff_min"));
}

BOOST_AUTO_TEST_CASE(key_prefix_is_empty_by_default_and_takes_ordinary_text)
{
    config cfg = config::from_urls({"redis://a:7001"});
    BOOST_TEST(cfg.key_prefix.empty());
    for (const char* prefix : {"redlock:", "app:locks:", "{locks}:", "a}b", "{x}{", "é:"}) {
        cfg.key_prefix = prefix;
        BOOST_TEST(redlock::validate(cfg) == "", prefix);
    }
}

BOOST_AUTO_TEST_CASE(key_prefix_with_a_control_character_is_rejected)
{
    config cfg = config::from_urls({"redis://a:7001"});
    cfg.key_prefix = "locks:\n";  // as read from a file with its line end
    const std::string problem = redlock::validate(cfg);
    BOOST_TEST(contains(problem, "config.key_prefix 'locks:\\x0a' contains a control character"),
               problem);
    BOOST_TEST(contains(problem, "at byte 6"), problem);
    cfg.key_prefix = "a\0b"s;
    BOOST_TEST(contains(redlock::validate(cfg), "'a\\x00b'"), redlock::validate(cfg));
}

BOOST_AUTO_TEST_CASE(key_prefix_hash_tags_must_be_closed_and_not_empty)
{
    config cfg = config::from_urls({"redis://a:7001"});
    cfg.key_prefix = "app{locks:";
    BOOST_TEST(contains(redlock::validate(cfg), "opens a hash tag '{' without closing it"),
               redlock::validate(cfg));
    cfg.key_prefix = "app:{}:";
    BOOST_TEST(contains(redlock::validate(cfg), "an empty hash tag '{}'"), redlock::validate(cfg));
}

BOOST_AUTO_TEST_SUITE_END()
