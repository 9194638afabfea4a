// The join handshake's proof: only the secret, the cluster name and the nonce it was made
// for give a proof that matches; nonces are fresh.
#define BOOST_TEST_MODULE join_proof
#include <boost/test/unit_test.hpp>

#include "cluster/join_proof.hpp"

using namespace troupe;

BOOST_AUTO_TEST_CASE(a_proof_matches_only_its_secret_name_and_nonce) {
  const auto nonce = make_join_nonce();
  const auto proof = join_proof("s3cret", "prod", nonce);
  BOOST_TEST(proof.size() == 32u);  // HMAC-SHA256
  BOOST_TEST(join_proof_matches("s3cret", "prod", nonce, proof));
  BOOST_TEST(!join_proof_matches("s3cret!", "prod", nonce, proof));
  BOOST_TEST(!join_proof_matches("s3cret", "test", nonce, proof));
  BOOST_TEST(!join_proof_matches("s3cret", "prod", make_join_nonce(), proof));
  auto truncated = proof;
  truncated.pop_back();
  BOOST_TEST(!join_proof_matches("s3cret", "prod", nonce, truncated));
  BOOST_TEST(!join_proof_matches("s3cret", "prod", nonce, {}));
}

// The name's length goes first, so moving bytes between the name and the nonce changes
// the proof.
BOOST_AUTO_TEST_CASE(name_and_nonce_cannot_trade_bytes) {
  const std::vector<uint8_t> nonce{'b', 'c'}, shifted{'c'};
  BOOST_TEST((join_proof("k", "ab", nonce) != join_proof("k", "abc", shifted)));
}

BOOST_AUTO_TEST_CASE(nonces_are_fresh) {
  const auto a = make_join_nonce(), b = make_join_nonce();
  BOOST_TEST(a.size() == join_nonce_bytes);
  BOOST_TEST((a != b));
}
