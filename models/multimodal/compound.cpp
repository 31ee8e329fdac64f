#include "models/multimodal/compound.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace orrery::models {

namespace {

std::size_t u(int i) { return static_cast<std::size_t>(i); }

bool share(const std::vector<int>& a, const std::vector<int>& b) {
  // Both ascending: a merge walk.
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) return true;
    if (a[i] < b[j]) ++i;
    else ++j;
  }
  return false;
}

}  // namespace

int WavePlan::stage(int section, int replica) const {
  ORRERY_CHECK(section >= 0 && u(section) < replicas.size() && replica >= 0 && replica < replicas[u(section)], "section {} replica {} out of range",
               section, replica);
  const auto own = [&](int k) { return u(k) >= colocated.size() || colocated[u(k)].empty(); };
  if (!own(section)) {
    const int at = colocated[u(section)][u(replica)];
    ORRERY_CHECK(at >= 0 && at < stages(), "section {} replica {} colocated on stage {} of {}", section, replica, at, stages());
    return at;
  }
  int s = 0;
  for (int k = 0; k < section; ++k) s += own(k) ? replicas[u(k)] : 0;
  return s + replica;
}

int WavePlan::stages() const {
  int s = 0;
  for (std::size_t k = 0; k < replicas.size(); ++k) s += k >= colocated.size() || colocated[k].empty() ? replicas[k] : 0;
  return s;
}

PipeProgram wavefront_program(const WavePlan& plan) {
  ORRERY_CHECK(plan.trainable.size() == plan.replicas.size(), "{} trainable flags for {} sections", plan.trainable.size(), plan.replicas.size());
  PipeProgram prog;
  prog.stages = plan.stages();
  const std::size_t n = plan.micro_batches.size();
  std::vector<int> fwd(n, -1), bwd(n, -1);
  std::vector<int> position(plan.replicas.size(), 0);
  for (std::size_t k = 0; k < n; ++k) {
    const WaveMicroBatch& mb = plan.micro_batches[k];
    PipeNode f;
    f.stage = plan.stage(mb.section, mb.replica);
    f.seconds = mb.f;
    f.out_bytes = mb.out_bytes;
    f.activation_bytes = mb.activation_bytes;
    // Each section's own order first; sections interleave freely (the greedy picks what is ready).
    f.priority = position[u(mb.section)]++;
    f.label = "F " + mb.label;
    fwd[k] = static_cast<int>(prog.ops.size());
    prog.ops.push_back(std::move(f));
    if (plan.trainable[u(mb.section)]) {
      PipeNode b;
      b.stage = prog.ops.back().stage;
      b.backward = true;
      b.seconds = mb.b;
      b.releases = fwd[k];
      b.deps.push_back(fwd[k]);
      b.label = "B " + mb.label;
      bwd[k] = static_cast<int>(prog.ops.size());
      prog.ops.push_back(std::move(b));
    }
  }
  for (const auto& [a, b] : plan.edges) {
    ORRERY_CHECK(a >= 0 && b >= 0 && u(a) < plan.replicas.size() && u(b) < plan.replicas.size(), "edge {} -> {} out of range", a, b);
    for (std::size_t x = 0; x < n; ++x) {
      if (plan.micro_batches[x].section != a) continue;
      for (std::size_t y = 0; y < n; ++y) {
        if (plan.micro_batches[y].section != b || !share(plan.micro_batches[x].samples, plan.micro_batches[y].samples)) continue;
        prog.ops[u(fwd[y])].deps.push_back(fwd[x]);
        if (bwd[x] >= 0 && bwd[y] >= 0) {
          prog.ops[u(bwd[x])].deps.push_back(bwd[y]);
          // The gradients travel back as the activations came.
          prog.ops[u(bwd[y])].out_bytes = std::max(prog.ops[u(bwd[y])].out_bytes, plan.micro_batches[x].out_bytes);
        }
      }
    }
  }
  return prog;
}

Reshard reshard(const std::vector<double>& sent, const std::vector<double>& received, double link) {
  ORRERY_CHECK(link > 0, "a reshard over a link of {} bytes/s", link);
  Reshard r;
  double busiest = 0;
  for (const double s : sent) r.bytes += s, busiest = std::max(busiest, s);
  for (const double g : received) busiest = std::max(busiest, g);
  r.seconds = busiest / link;
  return r;
}

double embedding_bytes(const MultimodalModel& m, const MultimodalSample& s) {
  double bytes = 0;
  for (std::size_t i = 0; i < m.modules.size(); ++i) {
    if (m.modules[i].kind != ModuleKind::projector) continue;
    for (const ModuleEdge& e : m.edges) {
      if (e.from != static_cast<int>(i)) continue;
      bytes += 2.0 * static_cast<double>(m.modules[u(e.to)].shape.hidden) * static_cast<double>(module_work(m, static_cast<int>(i), {s}).out_tokens);
    }
  }
  return bytes;
}

double module_params(const ModuleSpec& m) {
  if (m.kind == ModuleKind::projector) {
    const double inner = static_cast<double>(m.projector_hidden > 0 ? m.projector_hidden : m.shape.hidden);
    return static_cast<double>(m.shape.ffn_hidden) * inner + (m.projector_hidden > 0 ? inner * static_cast<double>(m.shape.hidden) : 0.0);
  }
  const double layer = static_cast<double>(m.shape.attention_params() + m.shape.dense_mlp_params());
  return m.shape.layers * layer + (m.kind == ModuleKind::llm ? static_cast<double>(m.shape.embedding_params()) : 0.0);
}

bool has_work(const MultimodalModel& m, int module, const MultimodalSample& sample) {
  const ModuleWork w = module_work(m, module, {sample});
  return w.tokens > 0 || !w.docs.empty();
}

std::vector<std::pair<int, int>> section_edges(const MultimodalModel& m, const std::vector<SectionSpec>& sections, int gpus, std::string_view source,
                                               std::string_view where) {
  const auto fail = [&](const std::string& at, const std::string& what) { throw sim::InputError(std::string(source), at, what); };
  std::vector<int> owner(m.modules.size(), -1);
  int used = 0;
  for (std::size_t s = 0; s < sections.size(); ++s) {
    const SectionSpec& x = sections[s];
    const std::string at = fmt::format("{}/{}", where, s);
    if (x.modules.empty()) fail(at + "/modules", fmt::format("section {} has no modules; expected one or more module names", sim::quote(x.name)));
    if (x.tp < 0 || x.dp < 0 || x.micro_batch < 0) {
      fail(at, fmt::format("section {} has tp {}, dp {}, micro_batch {}; expected positive sizes (or none: the policy chooses)", sim::quote(x.name), x.tp,
                           x.dp, x.micro_batch));
    }
    for (const int i : x.modules) {
      ORRERY_CHECK(i >= 0 && u(i) < m.modules.size(), "module {} out of range", i);
      if (owner[u(i)] >= 0) {
        fail(at + "/modules", fmt::format("module {} is in sections {} and {}; expected each module in one section",
                                          sim::quote(m.modules[u(i)].name), sim::quote(sections[u(owner[u(i)])].name), sim::quote(x.name)));
      }
      owner[u(i)] = static_cast<int>(s);
    }
    used += std::max(1, x.tp) * std::max(1, x.dp);
  }
  for (std::size_t i = 0; i < m.modules.size(); ++i) {
    if (owner[i] < 0) fail(std::string(where), fmt::format("module {} is in no section; expected every module of {} in one", sim::quote(m.modules[i].name),
                                                           sim::quote(m.name)));
  }
  if (used > gpus) {
    fail(std::string(where), fmt::format("the sections take {} GPUs (tp x dp, at least 1 each), more than the scenario's {}; expected at most {}", used,
                                         gpus, gpus));
  }
  std::vector<std::pair<int, int>> edges;
  for (const ModuleEdge& e : m.edges) {
    const int a = owner[u(e.from)], b = owner[u(e.to)];
    if (a != b && std::find(edges.begin(), edges.end(), std::pair{a, b}) == edges.end()) edges.emplace_back(a, b);
  }
  // A cycle among sections (modules grouped so that data goes out of a section and back in).
  const std::size_t n = sections.size();
  std::vector<int> colour(n, 0), stack;
  std::function<void(int)> visit = [&](int v) {
    colour[u(v)] = 1;
    stack.push_back(v);
    for (const auto& [a, b] : edges) {
      if (a != v) continue;
      if (colour[u(b)] == 1) {
        std::string names;
        for (auto it = std::find(stack.begin(), stack.end(), b); it != stack.end(); ++it) names += sections[u(*it)].name + " -> ";
        fail(std::string(where), fmt::format("the section graph has a cycle: {}{}; expected sections that data enters once (an acyclic graph)", names,
                                             sections[u(b)].name));
      }
      if (colour[u(b)] == 0) visit(b);
    }
    stack.pop_back();
    colour[u(v)] = 2;
  };
  for (std::size_t v = 0; v < n; ++v) {
    if (colour[v] == 0) visit(static_cast<int>(v));
  }
  return edges;
}

std::vector<SectionSpec> default_sections(const MultimodalModel& m) {
  std::vector<SectionSpec> out;
  std::vector<bool> taken(m.modules.size(), false);
  for (std::size_t i = 0; i < m.modules.size(); ++i) {
    const ModuleKind k = m.modules[i].kind;
    if (k != ModuleKind::vision_encoder && k != ModuleKind::audio_encoder && k != ModuleKind::text_encoder) continue;
    SectionSpec s;
    s.name = m.modules[i].name;
    s.modules.push_back(static_cast<int>(i));
    taken[i] = true;
    for (const ModuleEdge& e : m.edges) {
      if (e.from == static_cast<int>(i) && m.modules[u(e.to)].kind == ModuleKind::projector) {
        s.modules.push_back(e.to);
        taken[u(e.to)] = true;
      }
    }
    out.push_back(std::move(s));
  }
  SectionSpec rest;
  for (std::size_t i = 0; i < m.modules.size(); ++i) {
    if (taken[i]) continue;
    if (rest.name.empty() || m.modules[i].kind == ModuleKind::llm || m.modules[i].kind == ModuleKind::video_dit) rest.name = m.modules[i].name;
    rest.modules.push_back(static_cast<int>(i));
  }
  if (!rest.modules.empty()) out.push_back(std::move(rest));
  return out;
}

MultimodalModel distillation_model(std::string name, std::string_view teacher, std::string_view student) {
  MultimodalModel m;
  m.name = std::move(name);
  ModuleSpec t;
  t.name = "teacher";
  t.kind = ModuleKind::text_encoder;
  t.shape = ModelCatalog::builtin().model(teacher);
  t.trainable = false;
  ModuleSpec s;
  s.name = "student";
  s.kind = ModuleKind::llm;
  s.shape = ModelCatalog::builtin().model(student);
  m.modules = {t, s};
  m.edges = {{0, 1}};
  validate_multimodal(m, "<distillation>", "");
  return m;
}

}  // namespace orrery::models
