// The speculative rejection rule (Leviathan et al. / Chen et al. 2023): a
// draft token d drawn from the proposer's q is kept with probability
// min(1, p(d) / q(d)); on rejection the token is drawn from
// norm(max(0, p - q)). The token that results is distributed exactly as p,
// the target's sampling distribution, whatever q is.
#pragma once

#include <cstdint>

#include "runtime/spec/proposer.h"

namespace og {

struct SpecChoice {
  int32_t token = 0;
  bool accepted = false;  // token == the draft token, kept
};

// p: the target's distribution (Sampler::distribution); q: the proposer's for
// this position, empty = a point mass at `draft`. u_accept, u_draw: uniform
// draws in [0, 1).
SpecChoice spec_accept(const TokenDist& p, int32_t draft, const TokenDist& q, double u_accept, double u_draw);

}  // namespace og
