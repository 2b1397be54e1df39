-- Appended to every wrk script of the report: one machine-readable line with the run's totals
-- and latency percentiles (microseconds).
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK requests=%d duration_us=%d connect=%d read=%d write=%d status=%d timeout=%d p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
