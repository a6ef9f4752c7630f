// What `offgraph inspect` says about vision towers: an mmproj GGUF on its own
// (llama.cpp's clip file: projector type, sizes, tokens per image, mean/std),
// and the tower a model loads with (an HF directory's own, or --mmproj's).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "runtime/vision_model.h"

namespace og::app {

// A GGUF that holds a vision tower rather than a text model (clip.projector_type
// or general.architecture "clip").
bool is_mmproj(const GgufFile& g);
// The mmproj's facts as JSON ("vision" of inspect --json). *why is "" when
// offgraph loads the tower (beside a text model of its family), else the reason.
nlohmann::ordered_json inspect_mmproj(const GgufFile& g, std::string* why);
// The text lines of inspect_mmproj's JSON.
void print_mmproj(const nlohmann::ordered_json& v);
// A loaded tower's facts ("vision" of a model's inspect --json).
nlohmann::ordered_json vision_facts(const VisionModel& v);
// The tower `model` (read from `src`) loads with: --mmproj's file when given,
// else an HF directory's own; null when text-only. og::Error as load_model's.
nlohmann::ordered_json model_vision(const ModelSource& src, const Model& model, const std::string& mmproj);

}  // namespace og::app
