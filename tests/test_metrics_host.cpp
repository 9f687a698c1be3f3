// The host half of the range profiler without a GPU: metric selections parsed, checked against
// chips by CUPTI's profiler host API, and config images built for GH100.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "producers/cupti/metrics_host.hpp"

using namespace cuscope::detail;

namespace {

std::vector<std::string> names(const std::vector<Metric>& metrics) {
  std::vector<std::string> out;
  for (const Metric& m : metrics) out.push_back(m.name);
  return out;
}

std::vector<std::string> labels(const std::vector<Metric>& metrics) {
  std::vector<std::string> out;
  for (const Metric& m : metrics) out.push_back(m.label);
  return out;
}

std::vector<Metric> selection(std::string_view spec) {
  auto s = parse_metric_selection(spec);
  REQUIRE(s.errors.empty());
  return s.metrics;
}

}  // namespace

TEST_CASE("the sol set is GPU time, DRAM throughput and SM throughput", "[metrics]") {
  const auto sol = metric_set("sol");
  CHECK(names(sol) == std::vector<std::string>{"gpu__time_duration.sum",
                                               "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                                               "sm__throughput.avg.pct_of_peak_sustained_elapsed"});
  CHECK(labels(sol) == std::vector<std::string>{"GPU time", "DRAM %", "SM %"});
  REQUIRE(sol.size() == 3);
  CHECK(sol[0].combine == Combine::sum);
  CHECK(sol[0].unit == "nanosecond");
  CHECK(sol[1].combine == Combine::duration_weighted);
  CHECK(sol[1].unit == "percent");
  CHECK(sol[2].combine == Combine::duration_weighted);
}

TEST_CASE("the memory set is DRAM bytes read and written and the L2 hit rate", "[metrics]") {
  const auto memory = metric_set("memory");
  CHECK(names(memory) == std::vector<std::string>{"dram__bytes_read.sum", "dram__bytes_write.sum",
                                                  "lts__t_sector_hit_rate.pct"});
  CHECK(labels(memory) == std::vector<std::string>{"DRAM read", "DRAM write", "L2 hit %"});
  REQUIRE(memory.size() == 3);
  CHECK(memory[0].combine == Combine::sum);
  CHECK(memory[0].unit == "byte");
  CHECK(memory[1].combine == Combine::sum);
  CHECK(memory[2].combine == Combine::duration_weighted);
}

TEST_CASE("the compute set counts add, mul and fma per precision and the tensor pipe", "[metrics]") {
  const auto compute = metric_set("compute");
  CHECK(labels(compute) == std::vector<std::string>{"FP64 add", "FP64 mul", "FP64 fma", "FP32 add",
                                                    "FP32 mul", "FP32 fma", "FP16 add", "FP16 mul",
                                                    "FP16 fma", "Tensor %"});
  REQUIRE(compute.size() == 10);
  CHECK(compute[5].name == "sm__sass_thread_inst_executed_op_ffma_pred_on.sum");
  CHECK(compute[5].combine == Combine::sum);
  CHECK(compute[5].unit == "instruction");
  CHECK(compute[9].name == "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed");
  CHECK(compute[9].combine == Combine::duration_weighted);
}

TEST_CASE("the occupancy set is achieved occupancy and register-allocation stalls", "[metrics]") {
  const auto occupancy = metric_set("occupancy");
  CHECK(names(occupancy) ==
        std::vector<std::string>{"sm__warps_active.avg.pct_of_peak_sustained_active",
                                 ""
                                 "tpc__warp_launch_cycles_stalled_shader_cs_reason_register_allocation.avg."
                                 "pct_of_peak_sustained_elapsed"});
  CHECK(labels(occupancy) == std::vector<std::string>{"Occupancy %", "Reg stall %"});
}

TEST_CASE("a selection mixes sets and metric names, in order, each once", "[metrics]") {
  const auto s = parse_metric_selection(" dram__bytes_read.sum , sol,memory ,\tsol");
  CHECK(s.errors.empty());
  CHECK(names(s.metrics) == std::vector<std::string>{"dram__bytes_read.sum", "gpu__time_duration.sum",
                                                     "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                                                     "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                                     "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct"});
  CHECK(s.metrics[0].label == "DRAM read");  // a set's metric named alone keeps the set's label
}

TEST_CASE("an empty selection selects nothing", "[metrics]") {
  for (const char* spec : {"", " ", " , ,, "}) {
    INFO('"' << spec << '"');
    const auto s = parse_metric_selection(spec);
    CHECK(s.metrics.empty());
    CHECK(s.errors.empty());
  }
}

TEST_CASE("set names are case-insensitive", "[metrics]") {
  CHECK(selection("SOL") == metric_set("sol"));
  CHECK(selection("Memory") == metric_set("memory"));
}

TEST_CASE("an unknown set name is an error and the rest of the selection is kept", "[metrics]") {
  const auto s = parse_metric_selection("sol, fast");
  CHECK(s.errors ==
        std::vector<std::string>{"unknown metric set 'fast' (sets: sol, memory, compute, occupancy; "
                                 "or name a metric such as dram__bytes_read.sum)"});
  CHECK(s.metrics == metric_set("sol"));
}

TEST_CASE("a metric outside the sets is labelled by its name and combined by its rollup", "[metrics]") {
  const Metric bytes = metric_named("lts__t_bytes.sum");
  CHECK(bytes.label == "lts__t_bytes.sum");
  CHECK(bytes.combine == Combine::sum);
  CHECK(bytes.unit.empty());
  CHECK(metric_named("sm__cycles_active.avg").combine == Combine::duration_weighted);
  CHECK(metric_named("gpu__time_duration.sum.per_second").combine == Combine::duration_weighted);
}

TEST_CASE("a compute capability names a chip", "[metrics]") {
  CHECK(chip_for_compute_capability(9, 0) == "GH100");
  CHECK(chip_for_compute_capability(8, 0) == "GA100");
  CHECK(chip_for_compute_capability(8, 9) == "AD102");
  CHECK(chip_for_compute_capability(6, 1).empty());
}

TEST_CASE("combined values become the roofline's counters", "[metrics]") {
  const auto metrics = selection("sol,memory,compute");
  std::vector<double> values(metrics.size(), 0.0);
  const auto set = [&](std::string_view name, double v) {
    for (std::size_t i = 0; i < metrics.size(); ++i)
      if (metrics[i].name == name) values[i] = v;
  };
  set("gpu__time_duration.sum", 188'000);
  set("dram__bytes_read.sum", 3000);
  set("dram__bytes_write.sum", 1000);
  set("sm__sass_thread_inst_executed_op_fadd_pred_on.sum", 10);
  set("sm__sass_thread_inst_executed_op_fmul_pred_on.sum", 20);
  set("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 400);
  set("sm__sass_thread_inst_executed_op_dfma_pred_on.sum", 5);
  set("sm__sass_thread_inst_executed_op_hadd_pred_on.sum", 7);
  set("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 81.5);
  set("sm__throughput.avg.pct_of_peak_sustained_elapsed", 12.25);

  const auto c = roofline_counters(metrics, values);
  REQUIRE(c.kernel_ns);
  CHECK(*c.kernel_ns == 188'000.0);
  REQUIRE(c.dram_bytes);
  CHECK(*c.dram_bytes == 4000.0);
  REQUIRE(c.flops);
  CHECK(c.flops->fp32 == 830.0);  // 10 + 20 + 2 × 400
  CHECK(c.flops->fp64 == 10.0);
  CHECK(c.flops->fp16 == 7.0);
  REQUIRE(c.dram_pct);
  CHECK(*c.dram_pct == 81.5);
  REQUIRE(c.sm_pct);
  CHECK(*c.sm_pct == 12.25);
  CHECK_FALSE(c.occupancy_pct);
}

TEST_CASE("roofline inputs whose metrics were not all collected stay empty", "[metrics]") {
  const auto metrics = selection("dram__bytes_read.sum,sm__sass_thread_inst_executed_op_ffma_pred_on.sum");
  const std::vector<double> values{100, 50};
  const auto c = roofline_counters(metrics, values);
  CHECK_FALSE(c.kernel_ns);   // no gpu__time_duration.sum
  CHECK_FALSE(c.dram_bytes);  // no write bytes
  CHECK_FALSE(c.flops);       // no fadd, fmul
  CHECK_FALSE(c.dram_pct);
  CHECK_FALSE(c.sm_pct);
}

// CUPTI's profiler host cannot be loaded in a process with ASan, TSan or MSan (see
// kSanitizerRefusal): a sanitizer build checks the refusal, every other build the host API itself.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CUSCOPE_TEST_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define CUSCOPE_TEST_UNDER_SANITIZER 1
#endif
#endif

#ifdef CUSCOPE_TEST_UNDER_SANITIZER

TEST_CASE("under a sanitizer the host half refuses in one line and collects nothing", "[metrics]") {
  const auto config = build_config_image("GH100", metric_set("sol"));
  CHECK(config.errors == std::vector<std::string>{std::string(kSanitizerRefusal)});
  CHECK(config.metrics.empty());
  CHECK(config.image.empty());
  CHECK(config.passes == 0);
  CHECK(supported_chips().empty());
}

#else

TEST_CASE("every named set validates on GH100, GA100 and AD102 with the units it states", "[metrics]") {
  REQUIRE(metric_set_names().size() == 4);
  for (const char* chip : {"GH100", "GA100", "AD102"}) {
    for (std::string_view set : metric_set_names()) {
      INFO(chip << " " << set);
      const auto metrics = metric_set(set);
      REQUIRE_FALSE(metrics.empty());
      const auto valid = validate_metrics(chip, metrics);
      CHECK(valid.errors.empty());
      CHECK(valid.metrics == metrics);  // names, labels, rules and CUPTI's units all unchanged
    }
  }
}

TEST_CASE("replay passes per set on GH100", "[metrics]") {
  // CUPTI 13.0's scheduling for GH100; deterministic for a given CUPTI. SM throughput alone takes 8
  // (on GA100 it takes 5, on AD102 6); all four sets together take 9.
  const auto passes = [](std::string_view spec) {
    const auto config = build_config_image("GH100", selection(spec));
    CHECK(config.errors.empty());
    CHECK_FALSE(config.image.empty());
    return config.passes;
  };
  CHECK(passes("sol") == 8);
  CHECK(passes("memory") == 2);
  CHECK(passes("compute") == 2);
  CHECK(passes("occupancy") == 1);
  CHECK(passes("sol,memory,compute,occupancy") == 9);
  CHECK(passes("dram__bytes_read.sum") == 1);
  CHECK(passes("gpu__time_duration.sum") == 1);
}

TEST_CASE("a config image holds the metrics it was built for", "[metrics]") {
  const auto config = build_config_image("GH100", metric_set("memory"));
  CHECK(config.errors.empty());
  CHECK(config.metrics == metric_set("memory"));
  CHECK_FALSE(config.image.empty());
  CHECK(config.passes >= 1);
}

TEST_CASE("a metric the chip lacks is one error naming it and the chip, and the others are collected",
          "[metrics]") {
  const auto config =
      build_config_image("GH100", selection("dram__bytes_read.sum,dram__bogus.sum,gpu__time_duration.sum"));
  CHECK(config.errors == std::vector<std::string>{
                             "metric 'dram__bogus.sum' is not available on GH100; collecting the others"});
  CHECK(names(config.metrics) == std::vector<std::string>{"dram__bytes_read.sum", "gpu__time_duration.sum"});
  CHECK_FALSE(config.image.empty());
  CHECK(config.passes == 1);
}

TEST_CASE("a metric without a rollup is refused with a hint and does not spoil the others", "[metrics]") {
  // CUPTI knows the base name's properties but refuses to schedule it, and a refused add spoils
  // the host object it was made on: the others must still build.
  const auto config = build_config_image("GH100", selection("dram__bytes_read,dram__bytes_write.sum"));
  CHECK(config.errors ==
        std::vector<std::string>{
            "metric 'dram__bytes_read' cannot be collected on GH100 (CUPTI_ERROR_INVALID_PARAMETER; name a "
            "rollup such as 'dram__bytes_read.sum'); collecting the others"});
  CHECK(names(config.metrics) == std::vector<std::string>{"dram__bytes_write.sum"});
  CHECK(config.passes == 1);
}

TEST_CASE("an unknown chip is one error listing the supported chips", "[metrics]") {
  const auto config = build_config_image("XY999", metric_set("sol"));
  REQUIRE(config.errors.size() == 1);
  const std::string& e = config.errors[0];
  CHECK(e.starts_with("chip 'XY999' is not supported by this CUPTI (supported: GV100, "));
  CHECK(e.find("GH100") != std::string::npos);
  CHECK(e.ends_with(")"));
  CHECK(config.metrics.empty());
  CHECK(config.image.empty());
  CHECK(config.passes == 0);
}

TEST_CASE("validation fills in the unit of a metric outside the sets", "[metrics]") {
  const auto valid = validate_metrics("GH100", std::vector<Metric>{metric_named("lts__t_bytes.sum")});
  CHECK(valid.errors.empty());
  REQUIRE(valid.metrics.size() == 1);
  CHECK(valid.metrics[0].unit == "byte");  // from CUPTI
}

TEST_CASE("this CUPTI knows the chips the sets were checked on", "[metrics]") {
  const auto chips = supported_chips();
  for (const char* chip : {"GA100", "AD102", "GH100"})
    CHECK(std::find(chips.begin(), chips.end(), chip) != chips.end());
}

TEST_CASE("every chip a compute capability names is one this CUPTI knows", "[metrics]") {
  const auto chips = supported_chips();
  const int capabilities[][2] = {{7, 0}, {7, 2}, {7, 5}, {8, 0},  {8, 6},
                                 {8, 7}, {8, 9}, {9, 0}, {10, 0}, {12, 0}};
  for (const auto& cc : capabilities) {
    INFO(cc[0] << "." << cc[1]);
    const std::string chip(chip_for_compute_capability(cc[0], cc[1]));
    CHECK(std::find(chips.begin(), chips.end(), chip) != chips.end());
  }
}

#endif
