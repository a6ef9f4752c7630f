// Qwen2/Qwen3 config.json sliding-window rule, shared by both families.
#pragma once

#include "model/families/common.h"

namespace og {

// transformers: when use_sliding_window is true, layers listed as
// sliding_attention in layer_types (default: layer index >= max_window_layers)
// attend over sliding_window keys; otherwise every layer is full attention.
inline void apply_qwen_sliding_window(const HfInput& in, ModelConfig& c) {
  const nlohmann::json& cfg = in.config;
  bool use = false;
  if (json_has(cfg, "use_sliding_window")) {
    if (!cfg.at("use_sliding_window").is_boolean()) fail(in.file, ": use_sliding_window must be true or false");
    use = cfg.at("use_sliding_window").get<bool>();
  }
  const auto types = hf_layer_types(cfg, in.file, c.n_layers());
  if (!use) return;
  const int64_t window = json_int(cfg, "sliding_window", in.file).value_or(0);
  if (window <= 0 || window > INT32_MAX) fail(in.file, ": use_sliding_window is true but sliding_window = ", window);
  const int64_t max_window_layers = json_int(cfg, "max_window_layers", in.file).value_or(c.n_layers());
  for (int l = 0; l < c.n_layers(); ++l) {
    const bool sliding = types ? (*types)[l] : l >= max_window_layers;
    if (sliding) c.layers[l].window = static_cast<int>(window);
  }
}

}  // namespace og
