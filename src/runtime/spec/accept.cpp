// The rejection rule over sparse distributions (the target's candidate set
// after top-k / top-p / min-p is usually small).
#include "runtime/spec/accept.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"

namespace og {

namespace {

double prob_of(const TokenDist& d, int32_t id) {
  for (const auto& [t, pr] : d)
    if (t == id) return pr;
  return 0.0;
}

// A draw from the weights (not necessarily normalised); the last positive
// weight absorbs rounding.
int32_t draw(const std::vector<std::pair<int32_t, double>>& w, double u) {
  double total = 0;
  for (const auto& e : w) total += e.second;
  double acc = 0;
  int32_t last = w.front().first;
  for (const auto& [t, x] : w) {
    if (x <= 0) continue;
    acc += x;
    last = t;
    if (u * total < acc) return t;
  }
  return last;
}

}  // namespace

SpecChoice spec_accept(const TokenDist& p, int32_t draft, const TokenDist& q, double u_accept, double u_draw) {
  OG_CHECK(!p.empty(), "speculative decoding: the target's distribution is empty");
  std::unordered_map<int32_t, double> qmap;
  for (const auto& [t, pr] : q) qmap[t] += pr;
  auto q_of = [&](int32_t t) {
    if (q.empty()) return t == draft ? 1.0 : 0.0;
    const auto it = qmap.find(t);
    return it == qmap.end() ? 0.0 : it->second;
  };
  const double pd = prob_of(p, draft);
  const double qd = q_of(draft);
  // q(d) = 0 means the proposer could not have drawn d: treat as certain rejection.
  if (qd > 0 && u_accept * qd < pd) return {draft, true};
  std::vector<std::pair<int32_t, double>> residual;
  residual.reserve(p.size());
  for (const auto& [t, pr] : p) {
    residual.emplace_back(t, std::max(0.0, pr - q_of(t)));
  }
  bool any = false;
  for (const auto& e : residual) any = any || e.second > 0;
  // p <= q everywhere (so p == q): rejection had probability 0; draw from p.
  if (!any) return {draw(p, u_draw), false};
  const int32_t t = draw(residual, u_draw);
  return {t, t == draft};
}

}  // namespace og
