#include "sim/error.hpp"
#include "traces/cluster_traces.hpp"
#include "traces/throughput_tables.hpp"

#include "shared_data.hpp"
#include "approx.hpp"

#include <doctest/doctest.h>

#include "input_error.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

using namespace orrery;

namespace {

std::string write(const std::string& name, std::string_view text) {
  std::filesystem::path p(name);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream(name, std::ios::binary) << text;
  return name;
}

using testing::error_of;

// The real datasets beside the repository (../shared/data); empty when absent.
std::string data(const std::string& rel) {
  const std::string path = std::string(ORRERY_SOURCE_DIR) + "/../shared/data/" + rel;
  if (std::filesystem::exists(path)) return path;
  orrery::testing::record_skip(path + " is absent");
  return "";
}

models::Job job(std::string model, int batch, int gpus = 1) {
  models::Job j;
  j.model = std::move(model);
  j.batch = batch;
  j.gpus = gpus;
  j.iterations = 1000;
  return j;
}

}  // namespace

// ---- Gavel TSV ----

TEST_CASE("Gavel traces: the 7-field msr and the 10-field physical-cluster forms") {
  const auto msr = traces::read_gavel_trace(
      write("g7.trace",
            "Transformer (batch size 128)\tcd %s && python3 train.py\t-step\t1\t95121\t0.000000\t1\n"
            "\n"
            "A3C\tpython3 main.py\t--steps\t1\t500\t6.500000\t4\n"),
      false);
  REQUIRE(msr.jobs.size() == 2);
  CHECK(msr.jobs[0].model == "Transformer (batch size 128)");
  CHECK(msr.jobs[0].batch == 128);
  CHECK(msr.jobs[0].iterations == 95121);
  CHECK(msr.jobs[0].arrival_s == 0);
  CHECK(msr.jobs[0].gpus == 1);
  CHECK(msr.jobs[0].gpu_type.empty());
  CHECK(msr.jobs[1].id == "gavel-3");  // named by its line; the blank line 2 is no job
  CHECK(msr.jobs[1].model == "A3C");
  CHECK(msr.jobs[1].batch == 0);
  CHECK(msr.jobs[1].arrival_s == 6.5);
  CHECK(msr.jobs[1].gpus == 4);

  // job_type, command, working_directory, num_steps_arg, needs_data_dir, total_steps,
  // scale_factor, priority_weight, SLO, arrival_time
  const auto phys = traces::read_gavel_trace(
      write("g10.trace", "ResNet-50 (batch size 64)\tpython3 main.py\timagenet\t--num_minibatches\t1\t2931\t2\t1\t-1.000000\t30\n"), false);
  REQUIRE(phys.jobs.size() == 1);
  CHECK(phys.jobs[0].iterations == 2931);
  CHECK(phys.jobs[0].gpus == 2);
  CHECK(phys.jobs[0].arrival_s == 30);
  CHECK(phys.jobs[0].batch == 64);
}

TEST_CASE("Gavel traces: a bad row names file, line and column, or is skipped") {
  const std::string path = write("g_bad.trace",
                                 "LM (batch size 5)\tc\t--steps\t1\t100\t0\t1\n"
                                 "LM (batch size 5)\tc\t--steps\t1\tmany\t0\t1\n"
                                 "LM (batch size 5)\tc\tw\t--steps\t1\t100\t1\t1\t-1\t0\n"
                                 "LM (batch size 5)\tc\t--steps\t1\t100\t0\n");
  CHECK(error_of([&] { (void)traces::read_gavel_trace(path, false); }) ==
        "g_bad.trace:line 2:column total_steps: found \"many\", expected a whole number of at least 1 and at most 1000000000000 iterations (more than any training run takes)");
  const auto t = traces::read_gavel_trace(path, true);
  CHECK(t.jobs.size() == 1);
  CHECK(t.skipped == 3);
  // A 10-field row in a 7-field file, and a 6-field row: the first surplus or missing column.
  CHECK(error_of([&] { (void)traces::read_gavel_trace(write("g_wide.trace", "A3C\tc\ts\t1\t5\t0\t1\nA3C\tc\tw\ts\t1\t5\t1\t1\t-1\t0\n"), false); }) ==
        "g_wide.trace:line 2:column 8: found 10 fields, expected 7");
  CHECK(error_of([&] { (void)traces::read_gavel_trace(write("g_short.trace", "A3C\tc\ts\t1\t5\t0\t1\nA3C\tc\ts\t1\t5\t0\n"), false); }) ==
        "g_short.trace:line 2:column scale_factor: found 6 fields, expected 7");
  CHECK(error_of([&] { (void)traces::read_gavel_trace(write("g_none.trace", "\n"), false); }) == "g_none.trace: found no jobs");
}

TEST_CASE("Gavel traces: the real msr and physical-cluster files (gavel/SOURCE.md row counts)") {
  const std::string dir = data("gavel/traces");
  if (dir.empty()) return;
  // Rows per VC (gavel/SOURCE.md): 15 VCs, 15,264 jobs in all.
  const std::map<std::string, std::size_t> msr = {{"0e4a51", 1181}, {"103959", 986}, {"11cb48", 2000}, {"23dbec", 9},
                                                  {"2869ce", 533},  {"51b7ef", 18},  {"6214e9", 2000}, {"6c71a0", 2000},
                                                  {"795a4c", 3},    {"7f04ca", 972}, {"925e2b", 4},    {"b436b2", 2000},
                                                  {"e13805", 607},  {"ed69ec", 951}, {"ee9e8c", 2000}};
  std::size_t total = 0;
  std::vector<models::Job> all;
  for (const auto& [vc, rows] : msr) {
    const auto t = traces::read_gavel_trace(dir + "/msr/seed=0/" + vc + ".trace", false);
    CHECK_MESSAGE(t.jobs.size() == rows, vc);
    total += t.jobs.size();
    all.insert(all.end(), t.jobs.begin(), t.jobs.end());
  }
  CHECK(total == 15264);
  const std::map<std::string, std::size_t> physical = {{"artifact_evaluation", 15}, {"debug", 14}, {"debug_v2", 14}, {"highmem_test", 8},
                                                       {"max_min_fairness", 96},    {"medium_test", 20}, {"minimize_makespan", 100},
                                                       {"small_test", 20}};
  for (const auto& [name, rows] : physical) {
    CHECK_MESSAGE(traces::read_gavel_trace(dir + "/physical_cluster/" + name + ".trace", false).jobs.size() == rows, name);
  }
  // Paired with Gavel's table on 8-GPU V100 servers: every job whose (type, GPU count) Gavel
  // measured runs; 13,716 of the 15,264 do (the others ask for 2..64 GPUs of a type measured
  // only at other counts, or for ResNet-50 at batch 128 on several V100s, measured as 0).
  const std::string table = data("gavel/simulation_throughputs.json");
  if (table.empty()) return;
  const traces::GavelThroughput gavel(table, models::ClusterSpec{{{"v100", 63, 8}}});
  std::size_t runnable = 0;
  for (const models::Job& j : all) {
    const double r = gavel.rate(j, "v100", j.gpus, (j.gpus + 7) / 8);
    CHECK(r >= 0);
    CHECK(r < 1e4);
    runnable += r > 0;
  }
  CHECK(runnable == 13716);
}

// ---- Microsoft ITP (ElasticFlow) ----

TEST_CASE("ITP traces: raw and ElasticFlow columns, a last row without its newline") {
  const auto raw = traces::read_itp_trace(write("itp_raw.csv", "job_id,submission_time,duration,num_gpu\nj1,1932025,2429,64\nj2,2000581,1532,1"), false);
  REQUIRE(raw.jobs.size() == 2);
  CHECK(raw.jobs[0].id == "j1");
  CHECK(raw.jobs[0].arrival_s == 1932025);
  CHECK(raw.jobs[0].service_s == 2429);
  CHECK(raw.jobs[0].gpus == 64);
  CHECK(raw.jobs[1].gpus == 1);  // the row after the last '\n'
  CHECK(raw.jobs[1].model.empty());
  CHECK(raw.jobs[1].iterations == 0);

  const auto ef = traces::read_itp_trace(
      write("itp_ef.csv", "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
                          "bd,3715485,3249,deepspeech2,3716178,32,1,1075\n"),
      false);
  REQUIRE(ef.jobs.size() == 1);
  CHECK(ef.jobs[0].model == "deepspeech2");
  CHECK(ef.jobs[0].batch == 32);
  CHECK(ef.jobs[0].iterations == 3249);
  CHECK(ef.jobs[0].service_s == 1075);
  // ElasticFlow's own trace spelling: submit_time, iteration, ddl.
  const auto own = traces::read_itp_trace(
      write("ef_own.csv", "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration\n0,3715485,2011,cifar10,3719996,4096,1,5644\n"),
      false);
  REQUIRE(own.jobs.size() == 1);
  CHECK(own.jobs[0].arrival_s == 3715485);
  CHECK(own.jobs[0].iterations == 2011);
  CHECK(own.jobs[0].batch == 4096);
}

TEST_CASE("ITP traces: bad rows and missing columns") {
  const std::string path = write("itp_bad.csv", "job_id,submission_time,duration,num_gpu\na,0,10,1\nb,5,10,0\nc,-3,10,1\nd,7,10\n");
  CHECK(error_of([&] { (void)traces::read_itp_trace(path, false); }) ==
        "itp_bad.csv:line 3:column num_gpu: found \"0\", expected a whole number of at least 1 and at most 1000000 GPUs (more than any cluster holds)");
  const auto t = traces::read_itp_trace(path, true);
  CHECK(t.jobs.size() == 1);
  CHECK(t.skipped == 3);
  CHECK(error_of([&] { (void)traces::read_itp_trace(write("itp_col.csv", "job_id,submision_time,duration,num_gpu\na,0,1,1\n"), true); }) ==
        "itp_col.csv:line 1: missing column \"submission_time\"; did you mean \"submision_time\"?; found \"job_id\", \"submision_time\", \"duration\", \"num_gpu\"");
  // A header of thousands of columns (fuzz/corpus/job_traces/regress-long-header) is named in
  // one short line: 16 names of at most 40 characters, then the count.
  std::string wide;
  for (int i = 0; i < 3000; ++i) wide += (i ? "," : "") + std::string(60, 'x');
  const std::string e = error_of([&] { (void)traces::read_itp_trace(write("itp_wide.csv", wide + "\n1\n"), true); });
  CHECK(e.size() < 1200);
  CHECK(e.find("(3000 columns in all)") != std::string::npos);
}

TEST_CASE("ITP traces: the real files (microsoft-itp-elasticflow/SOURCE.md, elasticflow/SOURCE.md)") {
  const std::string dir = data("microsoft-itp-elasticflow");
  if (dir.empty()) return;
  // Data rows per raw file (SOURCE.md; the files end without '\n'): 69,351 jobs in all.
  const std::vector<std::size_t> rows = {1595, 5778, 3011, 15802, 3629, 2396, 12699, 13047, 11134, 260};
  std::size_t total = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto t = traces::read_itp_trace(fmt::format("{}/raw-traces/cluster{:02}.csv", dir, i + 1), false);
    CHECK(t.jobs.size() == rows[i]);
    total += t.jobs.size();
  }
  CHECK(total == 69351);
  const auto testbed = traces::read_itp_trace(dir + "/elasticflow-traces/195job.csv", false);
  CHECK(testbed.jobs.size() == 195);
  CHECK(traces::read_itp_trace(dir + "/elasticflow-traces/cluster01.csv", false).jobs.size() == 1595);
  // ElasticFlow's A100 table covers every (model, batch, GPUs) of the testbed trace.
  const std::string ef = data("elasticflow");
  if (ef.empty()) return;
  const traces::ElasticFlowThroughput table(ef);
  for (const models::Job& j : testbed.jobs) {
    const double r = table.rate(j, "a100", j.gpus, 1);
    CHECK_MESSAGE(r > 0, j.model, " ", j.batch, " ", j.gpus);
    CHECK(r < 100);
  }
  const auto pollux = traces::read_itp_trace(ef + "/traces_for_ElasticFlow/elasticVpollux_e.csv", false);
  CHECK(pollux.jobs.size() == 195);
  for (const models::Job& j : pollux.jobs) CHECK(table.rate(j, "t4", j.gpus, 1) > 0);
  CHECK(traces::read_itp_trace(ef + "/traces_for_ElasticFlow/philly_103959.csv", false).jobs.size() == 876);
}

// ---- Alibaba PAI 2023 ----

TEST_CASE("PAI pods: CPU pods left out, shared GPUs rounded up, never-scheduled pods, GPU types") {
  const auto p = traces::read_pai_pods(
      write("pai.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
            "cpu,8000,30517,0,0,,BE,Running,100,200,100\n"
            "share,6000,12288,1,460,,LS,Running,427061,12902960,427061\n"
            "multi,12000,24576,8,1000,T4,LS,Succeeded,500,900,520\n"
            "pend,12000,24576,2,1000,V100M16|V100M32,LS,Pending,600,1600,\n"),
      false);
  CHECK(p.cpu_pods == 1);
  CHECK(p.shared_pods == 1);
  CHECK(p.unscheduled_pods == 1);
  REQUIRE(p.trace.jobs.size() == 3);
  const auto& share = p.trace.jobs[0];
  CHECK(share.id == "share");
  CHECK(share.gpus == 1);  // 460 milli-GPUs hold one GPU
  CHECK(share.arrival_s == 427061);
  CHECK(share.service_s == 12902960 - 427061);
  CHECK(share.gpu_type.empty());
  const auto& multi = p.trace.jobs[1];
  CHECK(multi.gpus == 8);
  CHECK(multi.service_s == 900 - 520);  // from scheduling, not creation
  CHECK(multi.gpu_type == "t4");
  const auto& pend = p.trace.jobs[2];
  CHECK(pend.service_s == 1000);        // never scheduled: creation to deletion
  CHECK(pend.gpu_type.empty());         // two types allowed: any
}

TEST_CASE("PAI pods: bad rows, and the pod list without times") {
  const std::string path = write("pai_bad.csv",
                                 "name,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time,scheduled_time\n"
                                 "a,1,1000,,0,50,10\n"
                                 "b,1,1000,,0,5,10\n"
                                 "c,1,1500,,0,50,10\n"
                                 "d,0,0,,0,50,10\n");
  CHECK(error_of([&] { (void)traces::read_pai_pods(path, false); }) ==
        "pai_bad.csv:line 3:column deletion_time: found \"5\", expected a number of at least 10 and at most 1000000000 seconds (1e9 s is 31.7 years; "
        "simulated time must stay within int64 nanoseconds, 292 years)");
  const auto t = traces::read_pai_pods(path, true);
  CHECK(t.trace.jobs.size() == 1);
  CHECK(t.trace.skipped == 2);
  CHECK(t.cpu_pods == 1);
  CHECK(error_of([&] { (void)traces::read_pai_trace(write("pai_notime.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1000\n"), true); })
            .find("pai_notime.csv:line 1: missing column \"gpu_spec\"") == 0);
}

TEST_CASE("PAI: the real pod and node lists (alibaba-pai-gpu-v2023/SOURCE.md)") {
  const std::string dir = data("alibaba-pai-gpu-v2023");
  if (dir.empty()) return;
  // 8,152 pods: 1,088 CPU-only, 7,064 with GPUs, 3,078 of them sharing one GPU; 861 GPU pods
  // were never scheduled (no scheduled_time).
  const auto p = traces::read_pai_pods(dir + "/openb_pod_list_default.csv", false);
  CHECK(p.trace.jobs.size() == 7064);
  CHECK(p.cpu_pods == 1088);
  CHECK(p.shared_pods == 3078);
  CHECK(p.unscheduled_pods == 861);
  CHECK(p.trace.skipped == 0);
  // gpuspec33 constrains ~33% of the GPU pods; 2,010 allow exactly one type, 1,291 of them T4.
  const auto spec = traces::read_pai_trace(dir + "/openb_pod_list_gpuspec33.csv", false);
  CHECK(std::count_if(spec.jobs.begin(), spec.jobs.end(), [](const models::Job& j) { return !j.gpu_type.empty(); }) == 2010);
  CHECK(std::count_if(spec.jobs.begin(), spec.jobs.end(), [](const models::Job& j) { return j.gpu_type == "t4"; }) == 1291);
  CHECK(traces::read_pai_pods(dir + "/openb_pod_list_cpu050.csv", false).cpu_pods == 375);
  CHECK_THROWS_AS((void)traces::read_pai_trace(dir + "/openb_pod_list_multigpu50.csv", true), sim::InputError);
  // 1,213 GPU nodes holding 6,212 GPUs in 12 (type, GPUs per node) pools.
  const models::ClusterSpec c = traces::read_pai_cluster(dir + "/openb_node_list_all_node.csv");
  CHECK(c.pools.size() == 12);
  CHECK(c.total_gpus() == 6212);
  CHECK(std::accumulate(c.pools.begin(), c.pools.end(), 0, [](int n, const models::NodePool& pool) { return n + pool.nodes; }) == 1213);
  CHECK(c.gpus_per_node("g2") == 8);
  CHECK(c.gpus_per_node("t4") == 4);
}

// ---- Sia / Pollux workloads ----

TEST_CASE("Sia and Pollux workloads") {
  const auto t = traces::read_sia_trace(
      write("sia.csv", "name,time,application,num_replicas,batch_size\ncifar10-0,401.0,cifar10,12,4096\nbert-2,811.66189,bert,1,384\n"), false);
  REQUIRE(t.jobs.size() == 2);
  CHECK(t.jobs[0].id == "cifar10-0");
  CHECK(t.jobs[0].arrival_s == 401);
  CHECK(t.jobs[0].model == "cifar10");
  CHECK(t.jobs[0].gpus == 12);
  CHECK(t.jobs[0].batch == 4096);
  CHECK(t.jobs[1].arrival_s == 811.66189);
  CHECK(t.jobs[1].iterations == 0);  // the files hold no job length
  const std::string bad = write("sia_bad.csv", "name,time,application,num_replicas,batch_size\na,1,cifar10,2,128\nb,2,,2,128\nc,3,ncf,2,-1\n");
  CHECK(error_of([&] { (void)traces::read_sia_trace(bad, false); }) ==
        "sia_bad.csv:line 3:column application: found \"\", expected an application such as \"cifar10\"");
  CHECK(traces::read_sia_trace(bad, true).skipped == 2);

  const std::string sia = data("sia/workloads");
  const std::string pollux = data("pollux-adaptdl");
  if (sia.empty() || pollux.empty()) return;
  // 160 jobs per philly/saturn workload, 960 in newtrace (sia/SOURCE.md); 160 per Pollux workload.
  for (int i = 1; i <= 8; ++i) CHECK(traces::read_sia_trace(fmt::format("{}/philly/workload-{}.csv", sia, i), false).jobs.size() == 160);
  for (int i = 1; i <= 10; ++i) CHECK(traces::read_sia_trace(fmt::format("{}/saturn/workload-{}.csv", sia, i), false).jobs.size() == 160);
  CHECK(traces::read_sia_trace(sia + "/newtrace/workload-1.csv", false).jobs.size() == 960);
  for (const char* set : {"workloads", "workloads-realistic"}) {
    for (int i = 1; i <= 8; ++i) CHECK(traces::read_sia_trace(fmt::format("{}/{}/workload-{}.csv", pollux, set, i), false).jobs.size() == 160);
  }
}

// ---- Gavel throughputs ----

TEST_CASE("Gavel throughputs: consolidated, unconsolidated, other GPU counts") {
  const std::string path = write("gavel.json", R"J({
    "v100": {"('ResNet-50 (batch size 64)', 1)": {"null": 4.0, "('A3C', 1)": [1.5, 2.5]},
             "('ResNet-50 (batch size 64)', 4)": {"null": 12.0}},
    "v100_unconsolidated": {"('ResNet-50 (batch size 64)', 4)": {"null": 10.0}}})J");
  const traces::GavelThroughput g(path, models::ClusterSpec{{{"v100", 2, 4}}});
  CHECK(g.entries() == 3);
  const models::Job j = job("ResNet-50 (batch size 64)", 64);
  CHECK(g.rate(j, "v100", 1, 1) == 4.0);
  CHECK(g.rate(j, "v100", 4, 1) == 12.0);  // one 4-GPU server holds them
  CHECK(g.rate(j, "v100", 4, 2) == 10.0);  // spread over two: unconsolidated
  CHECK(g.rate(j, "v100", 2, 1) == 0);     // 2 GPUs not measured
  CHECK(g.rate(j, "k80", 1, 1) == 0);
  CHECK(g.work(j) == 1000);
  CHECK(error_of([] { traces::GavelThroughput(write("gavel_bad.json", R"J({"v100": {"('A3C', 1)": {"nul": 3}}})J"), {}); }) ==
        "gavel_bad.json:/v100/('A3C', 1): missing required field \"null\" (is \"nul\" a misspelling of it?)");
  CHECK(error_of([] { traces::GavelThroughput(write("gavel_neg.json", R"J({"v100": {"('A3C', 1)": {"null": -3}}})J"), {}); }) ==
        "gavel_neg.json:/v100/('A3C', 1)/null: found a number -3, expected a throughput of 0 or more iterations per second");
  CHECK(error_of([] { traces::GavelThroughput(write("gavel_syntax.json", "{\"v100\": {\n  \"x\": }"), {}); }).find("gavel_syntax.json:line 2, column") == 0);
}

TEST_CASE("Gavel throughputs: the real table (gavel/SOURCE.md)") {
  const std::string path = data("gavel/simulation_throughputs.json");
  if (path.empty()) return;
  const traces::GavelThroughput g(path, models::ClusterSpec{{{"v100", 4, 4}, {"k80", 4, 4}}});
  // 83 job keys for each of k80, p100, v100, v100_unconsolidated, p100_unconsolidated; 77 for
  // k80_unconsolidated.
  CHECK(g.entries() == 5 * 83 + 77);
  const models::Job r50 = job("ResNet-50 (batch size 64)", 64);
  CHECK(g.rate(r50, "v100", 1, 1) == orrery::testing::Approx(4.394774823323071));
  CHECK(g.rate(r50, "v100", 4, 1) == orrery::testing::Approx(9.451949566394442));
  CHECK(g.rate(r50, "v100", 4, 2) == orrery::testing::Approx(11.136430014818272));
  // Faster on a V100 than on a K80, and at most linear speed-up.
  const models::Job t128 = job("Transformer (batch size 128)", 128);
  CHECK(g.rate(t128, "v100", 1, 1) > g.rate(t128, "k80", 1, 1));
  CHECK(g.rate(t128, "v100", 4, 1) <= 4 * g.rate(t128, "v100", 1, 1));
}

// ---- ElasticFlow throughputs ----

TEST_CASE("ElasticFlow throughputs: rows by global batch, columns by GPU count") {
  write("ef/throughputs_A100/resnet50.csv", "global_batch_size,1,2,4\n64,6.5,11,nan\n128,3.5,,0\n");
  write("ef/throughputs_T4/cifar10.csv", "global_batch_size,1,2,4\n2048,0.7,1.2,2.5");
  write("ef/model_info.json", "{}");  // not a table: ignored
  const traces::ElasticFlowThroughput t("ef");
  CHECK(t.tables() == 2);
  CHECK(t.rate(job("resnet50", 64), "a100", 2, 1) == 11);
  CHECK(t.rate(job("resnet50", 64), "a100", 2, 2) == 11);  // no locality term
  CHECK(t.rate(job("resnet50", 64), "a100", 4, 1) == 0);   // nan: infeasible
  CHECK(t.rate(job("resnet50", 128), "a100", 1, 1) == 3.5);
  CHECK(t.rate(job("resnet50", 128), "a100", 2, 1) == 0);  // empty
  CHECK(t.rate(job("resnet50", 128), "a100", 4, 1) == 0);  // 0
  CHECK(t.rate(job("resnet50", 64), "a100", 3, 1) == 0);   // no such column
  CHECK(t.rate(job("resnet50", 256), "a100", 1, 1) == 0);  // no such row
  CHECK(t.rate(job("resnet50", 64), "t4", 1, 1) == 0);
  CHECK(t.rate(job("cifar10", 2048), "t4", 4, 1) == 2.5);

  traces::ElasticFlowThroughput u;
  CHECK(error_of([&] { u.add_table(write("ef_bad.csv", "global_batch_size,1,2\n64,fast,2\n"), "m", "a100"); }) ==
        "ef_bad.csv:line 2:column 1: found \"fast\", expected a number of at least 0");
  CHECK(error_of([&] { u.add_table(write("ef_head.csv", "batch,1,2\n64,1,2\n"), "m", "a100"); }) ==
        "ef_head.csv:line 1:column 1: found \"batch\", expected global_batch_size");
  CHECK(error_of([&] { u.add_table(write("ef_gpus.csv", "global_batch_size,1,two\n64,1,2\n"), "m", "a100"); }) ==
        "ef_gpus.csv:line 1:column 3: found \"two\", expected a GPU count");
  CHECK(error_of([] { traces::ElasticFlowThroughput("no_such_dir"); }) == "no_such_dir: not a readable folder");
}

TEST_CASE("ElasticFlow throughputs: the real tables (elasticflow/SOURCE.md)") {
  const std::string dir = data("elasticflow");
  if (dir.empty()) return;
  const traces::ElasticFlowThroughput t(dir);
  CHECK(t.tables() == 7 + 6);  // A100: 7 models, T4: 6
  CHECK(t.rate(job("resnet50", 64), "a100", 1, 1) == orrery::testing::Approx(6.8429775823889685));
  CHECK(t.rate(job("deepspeech2", 32), "a100", 64, 8) == 0);  // empty cell
  CHECK(t.rate(job("yolov3", 64), "t4", 32, 8) == 0);         // nan
  CHECK(t.rate(job("resnet50_cifar10", 64), "a100", 16, 2) == 0);
  // More GPUs help a large-batch job up to a point: VGG-16 at batch 64 gains from 1 to 32 GPUs.
  CHECK(t.rate(job("vgg16", 64), "a100", 32, 4) > 5 * t.rate(job("vgg16", 64), "a100", 1, 1));
}

// ---- Pollux / Sia step times ----

TEST_CASE("Pollux/Sia step times: interpolation, accumulation, placements") {
  write("ad/placements.csv",
        "placement,local_bsz,step_time,sync_time\n"
        "1,32,0.1,0.01\n1,64,0.2,0.02\n"
        "2,32,0.12,0.03\n2,64,0.22,0.04\n"
        "11,32,0.15,0.05\n"
        "12,32,0.2,0.05\n21,32,0.4,0.05\n");
  write("ad/scalability.csv",
        "num_nodes,num_replicas,local_bsz,step_time,sync_time\n"
        "2,4,32,0.2,0.06\n4,8,32,0.3,0.1\n4,16,32,0.5,0.2\n");
  traces::AdaptdlThroughput t;
  t.add_profile("ad/placements.csv", "ad/scalability.csv", "cifar10", "t4");
  CHECK(t.profiles() == 1);
  // Local batch 64 on one GPU: the measured 0.2 s step.
  CHECK(t.rate(job("cifar10", 64), "t4", 1, 1) == orrery::testing::Approx(1 / 0.2));
  // 96 over 2 GPUs = 48 each: halfway between 0.12 s (32) and 0.22 s (64).
  CHECK(t.rate(job("cifar10", 96), "t4", 2, 1) == orrery::testing::Approx(1 / 0.17));
  // 128 on one GPU exceeds the largest measured 64: two passes of 64, the second without sync.
  CHECK(t.rate(job("cifar10", 128), "t4", 1, 1) == orrery::testing::Approx(1 / (0.2 + (0.2 - 0.02))));
  // Below the smallest measured local batch: not profiled.
  CHECK(t.rate(job("cifar10", 16), "t4", 1, 1) == 0);
  // Two nodes with one GPU each ("11"), and "12"/"21" averaged for 3 GPUs on 2 nodes.
  CHECK(t.rate(job("cifar10", 64), "t4", 2, 2) == orrery::testing::Approx(1 / 0.15));
  CHECK(t.rate(job("cifar10", 96), "t4", 3, 2) == orrery::testing::Approx(1 / 0.3));
  // 12 GPUs on 4 nodes: between the 8- and 16-GPU profiles.
  CHECK(t.rate(job("cifar10", 384), "t4", 12, 4) == orrery::testing::Approx(1 / 0.4));
  // 6 GPUs on 3 nodes: no 3-node profile; halfway between 2 x 2 (0.2 s) and 4 x 2 (0.3 s).
  CHECK(t.rate(job("cifar10", 192), "t4", 6, 3) == orrery::testing::Approx(1 / 0.25));
  // 8 GPUs on 3 nodes: nothing at 2 nodes with 2.67 GPUs each to interpolate from.
  CHECK(t.rate(job("cifar10", 256), "t4", 8, 3) == 0);
  CHECK(t.rate(job("cifar10", 64), "v100", 1, 1) == 0);
  CHECK(t.rate(job("bert", 64), "t4", 1, 1) == 0);

  write("ad/bad_placements.csv", "placement,local_bsz,step_time,sync_time\n1,32,0.1,0.01\n2a,32,0.1,0.01\n");
  CHECK(error_of([&] { t.add_profile("ad/bad_placements.csv", "ad/scalability.csv", "m", "t4"); }) ==
        "ad/bad_placements.csv:line 3:column placement: found \"2a\", expected one digit per node (GPUs on it), e.g. \"22\"");
  write("ad/bad_scal.csv", "num_nodes,num_replicas,local_bsz,step_time\n4,8,32,0.3\n");
  CHECK(error_of([&] { t.add_profile("ad/placements.csv", "ad/bad_scal.csv", "m", "t4"); }).find("ad/bad_scal.csv:line 1: missing column \"sync_time\"") == 0);
  write("ad/zero.csv", "num_nodes,num_replicas,local_bsz,step_time,sync_time\n4,8,32,0,0\n");
  CHECK(error_of([&] { t.add_profile("ad/placements.csv", "ad/zero.csv", "m", "t4"); }) ==
        "ad/zero.csv:line 2:column step_time: found \"0\", expected a positive step time");
}

TEST_CASE("Pollux and Sia step times: the real profiles (pollux-adaptdl/SOURCE.md, sia/SOURCE.md)") {
  const std::string pollux_dir = data("pollux-adaptdl/traces");
  const std::string sia_dir = data("sia/traces");
  if (pollux_dir.empty() || sia_dir.empty()) return;
  const traces::AdaptdlThroughput pollux = traces::load_pollux_throughput(pollux_dir);
  CHECK(pollux.profiles() == 6);  // bert, cifar10, deepspeech2, imagenet, ncf, yolov3 on T4
  // cifar10 placements.csv line 2: placement 1, local batch 32, 0.0427886962890625 s per step.
  CHECK(pollux.rate(job("cifar10", 32), "t4", 1, 1) == orrery::testing::Approx(1 / 0.0427886962890625));
  const traces::AdaptdlThroughput sia = traces::load_sia_throughput(sia_dir);
  CHECK(sia.profiles() == 6 * 5);  // the six models on aws, azure, dgx-ext, quad, rtx
  // Same cifar10 point on DGX-A100 (placements-dgx-ext.csv and scalability-dgx-ext.csv agree).
  CHECK(sia.rate(job("cifar10", 32), "a100", 1, 1) == orrery::testing::Approx(1 / 0.035044655203819275));
  // Every job of Pollux's workload-1 runs on T4 at its request, packed 4 per node (its testbed),
  // and on Sia's 8-GPU DGX-A100 nodes when it fits two of them. (Not always faster there: Sia's
  // yolov3 A100 profile is slower than its T4 one at local batch 16.)
  // At local batch 128, 20 GPUs on 5 nodes (no 5-node profile) lie between 16 on 4 and 24 on 6.
  const double r5 = pollux.rate(job("cifar10", 20 * 128), "t4", 20, 5);
  const double r4 = pollux.rate(job("cifar10", 16 * 128), "t4", 16, 4), r6 = pollux.rate(job("cifar10", 24 * 128), "t4", 24, 6);
  CHECK(r5 > std::min(r4, r6));
  CHECK(r5 < std::max(r4, r6));
  const std::string wl = data("pollux-adaptdl/workloads/workload-1.csv");
  if (wl.empty()) return;
  for (const models::Job& j : traces::read_sia_trace(wl, false).jobs) {
    const int nodes = (j.gpus + 3) / 4;
    const double t4 = pollux.rate(j, "t4", j.gpus, nodes);
    CHECK_MESSAGE(t4 > 0, j.id);
    CHECK(t4 < 1000);
    if (j.gpus <= 16) CHECK_MESSAGE(sia.rate(j, "a100", j.gpus, (j.gpus + 7) / 8) > 0, j.id);
  }
}
