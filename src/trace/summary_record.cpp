// trace/summary_record.cpp — the Summary record's payload, both ways (summary_record.hpp). Its
// tails are appended in order and read where present: a new one goes last, on both sides.
// Never here: the record's header or a file.
#include "trace/summary_record.hpp"

namespace cuscope::trace {

void encode_summary(Encoder& e, const Summary& s) {
  for (const std::string* str : {&s.device, &s.gpu_timing, &s.activity_status, &s.counters_status, &s.clock})
    e.str(str->substr(0, 4096));
  e.put(static_cast<std::uint32_t>(s.notes.size() < 64 ? s.notes.size() : 64));
  for (std::size_t i = 0; i < s.notes.size() && i < 64; ++i) e.str(s.notes[i].substr(0, 4096));
  for (double d : {s.dram_bytes_per_s, s.fp64_flop_per_s, s.fp32_flop_per_s, s.fp16_flop_per_s}) e.put(d);
  e.str(s.peaks_source.substr(0, 4096));
  for (std::uint64_t v :
       {s.steps, s.recorded_steps, s.wall_ns, s.cross_thread_ends, s.stray_pops, s.gpu_event_failures,
        s.scopes_in_capture, s.adjusted_names, s.name_table_full, s.refused_buffers, s.window_start_step,
        s.outside_window_scopes, s.rejected_counts, s.unrecorded_scopes})
    e.put(v);
  const std::size_t spans = s.spans.size() < kMaxSummarySpans ? s.spans.size() : kMaxSummarySpans;
  e.put(static_cast<std::uint32_t>(spans));
  for (std::size_t i = 0; i < spans; ++i) {
    const SpanStats& x = s.spans[i];
    e.str(x.domain.substr(0, 256));
    e.str(x.name.substr(0, 256));
    for (std::uint64_t v :
         {x.host.count, x.host.total_ns, x.host.min_ns, x.host.max_ns, x.open, x.cross_thread})
      e.put(v);
  }
  for (std::uint64_t v : {s.unmatched_span_ends, s.spans_dropped, s.spans_cut + (s.spans.size() - spans)})
    e.put(v);
  for (std::uint64_t v : {s.activity_buffers, s.activity_processing_ns}) e.put(v);
  for (std::uint64_t v : {s.clock_steps, s.step_ms}) e.put(v);
}

bool decode_summary(Decoder& d, Summary& s) {
  for (std::string* str : {&s.device, &s.gpu_timing, &s.activity_status, &s.counters_status, &s.clock})
    *str = std::string(d.str());
  const auto notes = d.get<std::uint32_t>();
  if (notes > 1024) return false;
  for (std::uint32_t i = 0; i < notes && !d.failed(); ++i) s.notes.emplace_back(d.str());
  for (double* x : {&s.dram_bytes_per_s, &s.fp64_flop_per_s, &s.fp32_flop_per_s, &s.fp16_flop_per_s})
    *x = d.get<double>();
  s.peaks_source = std::string(d.str());
  for (std::uint64_t* x :
       {&s.steps, &s.recorded_steps, &s.wall_ns, &s.cross_thread_ends, &s.stray_pops, &s.gpu_event_failures,
        &s.scopes_in_capture, &s.adjusted_names, &s.name_table_full, &s.refused_buffers, &s.window_start_step,
        &s.outside_window_scopes, &s.rejected_counts, &s.unrecorded_scopes})
    *x = d.get<std::uint64_t>();
  if (!d.failed() && d.left() > 0) {  // the NVTX start/end ranges' tail (absent in older files)
    const auto spans = d.get<std::uint32_t>();
    if (spans > kMaxSummarySpans) return false;
    for (std::uint32_t i = 0; i < spans && !d.failed(); ++i) {
      SpanStats& x = s.spans.emplace_back();
      x.domain = std::string(d.str());
      x.name = std::string(d.str());
      for (std::uint64_t* f :
           {&x.host.count, &x.host.total_ns, &x.host.min_ns, &x.host.max_ns, &x.open, &x.cross_thread})
        *f = d.get<std::uint64_t>();
    }
    for (std::uint64_t* x : {&s.unmatched_span_ends, &s.spans_dropped, &s.spans_cut})
      *x = d.get<std::uint64_t>();
  }
  if (!d.failed() && d.left() > 0) {  // cuscope's own processing (absent in older files)
    for (std::uint64_t* x : {&s.activity_buffers, &s.activity_processing_ns}) *x = d.get<std::uint64_t>();
  }
  if (!d.failed() && d.left() > 0)  // the steps cuscope's clock ended (absent in older files)
    for (std::uint64_t* x : {&s.clock_steps, &s.step_ms}) *x = d.get<std::uint64_t>();
  return d.done();
}

}  // namespace cuscope::trace
