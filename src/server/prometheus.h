// /metrics: ServingMetrics::Snapshot in the Prometheus text exposition
// format 0.0.4. Every family has "# HELP" and "# TYPE" lines; folio's names
// carry the "folio:" prefix, and the families routers built for vLLM read
// follow with vLLM's "vllm:" names, labels and meanings. Counters end in
// _total, histograms have cumulative _bucket{le="..."} lines ending with
// le="+Inf", then _sum and _count.
#pragma once

#include <string>
#include <string_view>

#include "engine/serving_metrics.h"
#include "server/http_transport.h"

namespace folio::server {

inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// `model` labels every sample (model_name="..."); "" leaves labels out.
// `http`, when given, adds the HTTP layer's connection counts.
std::string render_prometheus(const ServingMetrics::Snapshot& s, std::string_view model = "",
                              const TransportStats* http = nullptr);

// A sample value as Prometheus writes it: integers without a point, +Inf,
// -Inf, NaN.
std::string prometheus_number(double v);

}  // namespace folio::server
