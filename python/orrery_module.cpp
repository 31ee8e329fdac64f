// The Python module `orrery`: the same library entries as the command line (runs/, studies/),
// with scenarios given as paths or dicts and results returned as dicts. python/orrery/__init__.py
// wraps it (keyword arguments, DataFrames); this file only converts arguments and results.
//   >>> import orrery
//   >>> orrery.step("examples/scenarios/llama3-70b-h100-64.json")["mfu"]
#include "runs/policy_list.hpp"
#include "runs/progress.hpp"
#include "runs/runs.hpp"
#include "sim/error.hpp"
#include "studies/plan_search.hpp"
#include "studies/sweep.hpp"
#include "validation/validation.hpp"
#include "traces/json_input.hpp"

#include <nlohmann/json.hpp>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

namespace py = pybind11;

namespace orrery::python {

namespace {

// A scenario (or plan) argument: a path, or a dict that is read under the name `dict_name` with
// its relative paths resolved against the current directory.
struct Input {
  std::string path;
  std::unique_ptr<traces::FileOverlay> overlay;
};

Input input_of(const py::object& value, const char* dict_name) {
  Input in;
  if (py::isinstance<py::dict>(value)) {
    const py::module_ json = py::module_::import("json");
    in.path = dict_name;
    in.overlay = std::make_unique<traces::FileOverlay>(in.path, py::cast<std::string>(json.attr("dumps")(value)));
  } else if (py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__")) {
    in.path = py::cast<std::string>(py::module_::import("os").attr("fspath")(value));
  } else {
    throw py::type_error("expected a path (str or os.PathLike) or a dict, found " + py::cast<std::string>(py::str(value.get_type())));
  }
  return in;
}

std::string optional_path(const py::object& value) {
  if (value.is_none()) return "";
  return py::cast<std::string>(py::module_::import("os").attr("fspath")(value));
}

// JSON text to Python objects (the reports are JSON; json.loads keeps their exact numbers).
py::object loads(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

// While a library call runs: the GIL released (sweeps run points on threads), progress reports
// handed to `callback(update)` (a dict) with the GIL held, and the call's summary discarded.
class Call {
 public:
  explicit Call(const py::object& callback) {
    if (callback.is_none()) {
      target_.emplace(runs::ProgressSettings{});
      return;
    }
    runs::ProgressSettings settings;
    settings.delay_s = 0;
    settings.log_every_s = 0.5;
    settings.ticker = false;
    settings.on_update = [callback](const runs::ProgressUpdate& u) {
      const py::gil_scoped_acquire gil;
      try {
        py::dict d;
        d["label"] = std::string(u.label);
        d["done"] = u.done;
        d["total"] = u.total;
        d["unit"] = std::string(u.unit);
        d["elapsed_s"] = u.elapsed_s;
        d["eta_s"] = std::isnan(u.eta_s) ? py::object(py::none()) : py::object(py::float_(u.eta_s));
        d["note"] = std::string(u.note);
        d["last"] = u.last;
        d["text"] = std::string(u.text);
        callback(d);
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("orrery progress callback");
      }
    };
    target_.emplace(std::move(settings));
  }

  template <class F>
  void run(F&& f) {
    const py::gil_scoped_release nogil;
    f(summary_);
  }
  // What the run printed for people (for the runs whose result is a text).
  std::string summary() const { return summary_.str(); }

 private:
  std::optional<runs::ProgressTarget> target_;
  std::ostringstream summary_;
};

py::dict step(const py::object& scenario, bool estimate, const py::object& gpus, const py::object& trace, const py::object& html,
              const py::object& report, const std::string& train_tokens, bool no_reuse, const py::object& progress) {
  const Input in = input_of(scenario, "<scenario dict>");
  runs::StepOptions o;
  o.scenario_path = in.path;
  o.estimate = estimate;
  o.gpus_path = optional_path(gpus);
  o.trace_path = optional_path(trace);
  o.html_path = optional_path(html);
  o.report_path = optional_path(report);
  o.train_tokens = train_tokens;
  o.no_reuse = no_reuse;
  std::string json;
  o.report_json = &json;
  Call call(progress);
  call.run([&](std::ostream& out) { runs::step(o, out); });
  return loads(json);
}

py::dict compare(const py::object& scenario, const std::string& policies, int steps, int iterations, const py::object& gpus,
                 const py::object& jobs, bool skip_bad_rows, const py::object& trace, int trace_step, const py::object& html,
                 const py::object& report, const py::object& progress) {
  const Input in = input_of(scenario, "<scenario dict>");
  runs::CompareOptions o;
  o.scenario_path = in.path;
  o.policies = policies;
  o.steps = steps;
  o.iterations = iterations;
  o.gpus_path = optional_path(gpus);
  o.jobs_path = optional_path(jobs);
  o.skip_bad_rows = skip_bad_rows;
  o.trace_path = optional_path(trace);
  o.trace_step = trace_step;
  o.html_path = optional_path(html);
  o.report_path = optional_path(report);
  std::string json;
  o.report_json = &json;
  Call call(progress);
  call.run([&](std::ostream& out) { runs::compare(o, out); });
  return loads(json);
}

py::dict cluster(const py::object& scenario, const std::string& policy, const py::object& jobs, bool skip_bad_rows, const py::object& timeline,
                 const py::object& csv, const py::object& html, const py::object& report, const py::object& progress) {
  const Input in = input_of(scenario, "<scenario dict>");
  runs::ClusterOptions o;
  o.scenario_path = in.path;
  o.policy = policy;
  o.jobs_path = optional_path(jobs);
  o.skip_bad_rows = skip_bad_rows;
  o.timeline_path = optional_path(timeline);
  o.csv_path = optional_path(csv);
  o.html_path = optional_path(html);
  o.report_path = optional_path(report);
  std::string json;
  o.report_json = &json;
  Call call(progress);
  call.run([&](std::ostream& out) { runs::cluster(o, out); });
  return loads(json);
}

py::dict collective(const std::string& topology, const std::string& op, const std::string& algo, const std::string& proto, bool nvls,
                    const std::string& size, int ranks, int channels,
                    int chunks, int root, int peer, const py::object& alltoallv, const std::string& quantum, const py::object& trace,
                    const py::object& report) {
  runs::CollectiveOptions o;
  o.topology = topology;
  o.op = op;
  o.algo = algo;
  o.proto = proto;
  o.nvls = nvls;
  o.size = size;
  o.ranks = ranks;
  o.channels = channels;
  o.chunks = chunks;
  o.root = root;
  o.peer = peer;
  o.alltoallv_path = optional_path(alltoallv);
  o.quantum = quantum;
  o.trace_path = optional_path(trace);
  o.report_path = optional_path(report);
  std::string json;
  o.report_json = &json;
  Call call{py::none()};
  call.run([&](std::ostream& out) { runs::collective(o, out); });
  return loads(json);
}

py::dict sweep(const py::object& plan, const py::object& out_path, const py::object& csv, const py::object& html, int jobs, bool resume,
               int max_points, const py::object& progress) {
  const Input in = input_of(plan, "<sweep plan dict>.json");
  studies::SweepOptions o;
  o.plan_path = in.path;
  o.out_path = optional_path(out_path);
  o.csv_path = optional_path(csv);
  o.html_path = optional_path(html);
  o.jobs = jobs;
  o.resume = resume;
  o.max_points = max_points;
  nlohmann::json results;
  o.results = &results;
  Call call(progress);
  call.run([&](std::ostream& out) { studies::sweep(o, out); });
  return loads(results.dump());
}

py::dict plan(const py::object& plan_file, const py::object& gpus, std::optional<int> top, const std::string& train_tokens,
              const std::string& cluster_sizes, const py::object& report, const py::object& progress) {
  const Input in = input_of(plan_file, "<plan search dict>");
  studies::PlanOptions o;
  o.plan_path = in.path;
  o.gpus_path = optional_path(gpus);
  o.top_k = top;
  o.train_tokens = train_tokens;
  o.cluster_sizes = cluster_sizes;
  o.report_path = optional_path(report);
  std::string json;
  o.report_json = &json;
  Call call(progress);
  call.run([&](std::ostream& out) { studies::plan(o, out); });
  return loads(json);
}


py::dict replay(const py::object& graph, const py::object& trace, const py::object& report) {
  runs::ReplayOptions o;
  o.graph_path = optional_path(graph);
  o.trace_path = optional_path(trace);
  o.report_path = optional_path(report);
  std::string json;
  o.report_json = &json;
  Call call{py::none()};
  call.run([&](std::ostream& out) { runs::replay(o, out); });
  return loads(json);
}

std::string topology(const std::string& spec, const py::object& save) {
  runs::TopologyOptions o;
  o.topology = spec;
  o.save_path = optional_path(save);
  Call call{py::none()};
  call.run([&](std::ostream& out) { runs::topology(o, out); });
  return call.summary();
}

std::string gpus(const py::object& catalog) {
  runs::GpusOptions o;
  o.gpus_path = optional_path(catalog);
  Call call{py::none()};
  call.run([&](std::ostream& out) { runs::gpus(o, out); });
  return call.summary();
}

py::dict cost(const std::string& gpu, const std::vector<std::string>& kernels, const py::object& calibration, const py::object& catalog,
              const py::object& report) {
  runs::CostOptions o;
  o.gpu = gpu;
  o.kernels = kernels;
  o.calibration_path = optional_path(calibration);
  o.gpus_path = optional_path(catalog);
  o.report_path = optional_path(report);
  std::string json;
  o.report_json = &json;
  Call call{py::none()};
  call.run([&](std::ostream& out) { runs::cost(o, out); });
  return loads(json);
}

std::string calibrate_measure(const py::object& out_path, bool quick, int repetitions, std::uint64_t seed, const py::object& progress) {
  runs::CalibrateMeasureOptions o;
  o.out_path = optional_path(out_path);
  o.quick = quick;
  o.repetitions = repetitions;
  o.seed = seed;
  Call call(progress);
  call.run([&](std::ostream& out) { runs::calibrate_measure(o, out); });
  return call.summary();
}

std::string calibrate_fit(const py::object& profile, const py::object& out_path) {
  runs::CalibrateFitOptions o;
  o.profile_path = optional_path(profile);
  o.out_path = optional_path(out_path);
  Call call{py::none()};
  call.run([&](std::ostream& out) { runs::calibrate_fit(o, out); });
  return call.summary();
}

std::string doclens(const std::string& action, const std::string& source, const py::object& data_dir, const std::string& model, double median,
                    double p99, std::int64_t max, std::uint64_t seed, std::int64_t tokens, int batches, const py::object& out_path) {
  runs::DoclensOptions o;
  o.action = action;
  o.source = source;
  if (!data_dir.is_none()) o.data_dir = optional_path(data_dir);
  o.model = model;
  o.median = median;
  o.p99 = p99;
  o.max = max;
  o.seed = seed;
  o.tokens = tokens;
  o.batches = batches;
  o.out_path = optional_path(out_path);
  Call call{py::none()};
  call.run([&](std::ostream& out) { runs::doclens(o, out); });
  return call.summary();
}

std::string validate(const py::object& data_dir, const py::object& out_path, const std::string& only, const py::object& progress) {
  validation::ValidateOptions o;
  if (!data_dir.is_none()) o.data_dir = optional_path(data_dir);
  o.out_path = optional_path(out_path);
  o.only = only;
  Call call(progress);
  call.run([&](std::ostream& out) { validation::validate(o, out); });
  return call.summary();
}

std::string policies() {
  using runs::PolicyFamily;
  return runs::policy_listing({PolicyFamily::sequence, PolicyFamily::pipeline, PolicyFamily::ep_comm, PolicyFamily::moe_routing, PolicyFamily::multimodal, PolicyFamily::video_attention,
                               PolicyFamily::cluster, PolicyFamily::rl,
                               PolicyFamily::rl_dispatcher});
}

}  // namespace

}  // namespace orrery::python

PYBIND11_MODULE(_orrery, m) {
  using namespace orrery::python;
  using py::arg;
  m.doc() = "Orrery's library entries (see the orrery package for the documented functions)";
  // The one-line message of the command line ("file:/pointer: found ..., expected ...").
  static py::exception<orrery::sim::InputError> input_error(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const orrery::sim::InputError& e) {
      input_error(e.what());
    }
  });
  m.def("step", &step, arg("scenario"), arg("estimate"), arg("gpus"), arg("trace"), arg("html"), arg("report"), arg("train_tokens"),
        arg("no_reuse"), arg("progress"));
  m.def("compare", &compare, arg("scenario"), arg("policies"), arg("steps"), arg("iterations"), arg("gpus"), arg("jobs"), arg("skip_bad_rows"),
        arg("trace"), arg("trace_step"), arg("html"), arg("report"), arg("progress"));
  m.def("cluster", &cluster, arg("scenario"), arg("policy"), arg("jobs"), arg("skip_bad_rows"), arg("timeline"), arg("csv"), arg("html"),
        arg("report"), arg("progress"));
  m.def("collective", &collective, arg("topology"), arg("op"), arg("algo"), arg("proto"), arg("nvls"), arg("size"), arg("ranks"), arg("channels"), arg("chunks"), arg("root"),
        arg("peer"), arg("alltoallv"), arg("quantum"), arg("trace"), arg("report"));
  m.def("sweep", &sweep, arg("plan"), arg("out"), arg("csv"), arg("html"), arg("jobs"), arg("resume"), arg("max_points"), arg("progress"));
  m.def("replay", &replay, arg("graph"), arg("trace"), arg("report"));
  m.def("topology", &topology, arg("spec"), arg("save"));
  m.def("gpus", &gpus, arg("catalog"));
  m.def("cost", &cost, arg("gpu"), arg("kernels"), arg("calibration"), arg("catalog"), arg("report"));
  m.def("calibrate_measure", &calibrate_measure, arg("out"), arg("quick"), arg("repetitions"), arg("seed"), arg("progress"));
  m.def("calibrate_fit", &calibrate_fit, arg("profile"), arg("out"));
  m.def("doclens", &doclens, arg("action"), arg("source"), arg("data_dir"), arg("model"), arg("median"), arg("p99"), arg("max"), arg("seed"),
        arg("tokens"), arg("batches"), arg("out"));
  m.def("validate", &validate, arg("data_dir"), arg("out"), arg("only"), arg("progress"));
  m.def("policies", &policies);
  m.def("plan", &plan, arg("plan"), arg("gpus"), arg("top"), arg("train_tokens"), arg("cluster_sizes"), arg("report"), arg("progress"));
}
