package io.lakestats.spark;

import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.sources.Filter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Paimon's scans (DataSource V2, {@code org.apache.paimon.spark.PaimonScan}) reporting
 * lakestats' statistics. Paimon's scan knows its snapshot only once it has planned its splits
 * (each {@code DataSplit} names the snapshot it was planned from: the latest, or the one a
 * time-travel option selects), which Paimon's own {@code estimateStatistics} does too: so the
 * statistics are looked up when Spark first asks for them, and Paimon's own are returned when
 * lakestats has none for that snapshot.
 */
final class PaimonScans {
  private static final Logger LOG = LoggerFactory.getLogger(PaimonScans.class);
  private static final String PAIMON_SCAN = "org.apache.paimon.spark.PaimonScan";

  private PaimonScans() {}

  /**
   * The scan, reporting lakestats' statistics of its snapshot when there are some. {@code kept}:
   * whether the partition filters Paimon evaluates itself were returned to Spark (a Filter
   * above the scan narrows the statistics); a scan with such filters otherwise (a Paimon whose
   * builder pushes them another way) keeps Paimon's own statistics.
   */
  static Scan withStatistics(Scan scan, Map<String, String> roots, Configuration hadoop,
      java.util.Set<String> histograms, boolean kept) {
    if (!scan.getClass().getName().equals(PAIMON_SCAN)) {
      return scan; // e.g. a pushed-down aggregate's local scan
    }
    Statistics[] found = new Statistics[1];
    boolean[] looked = new boolean[1];
    return (Scan) Forwarding.proxy(scan, List.of(SupportsReportStatistics.class),
        (original, m, a) -> {
          if (!m.getName().equals("estimateStatistics") || m.getParameterCount() != 0) {
            return Forwarding.PASS;
          }
          synchronized (found) {
            if (!looked[0]) {
              looked[0] = true;
              found[0] = lookup((Scan) original, roots, hadoop, histograms, kept);
            }
          }
          return found[0] != null ? found[0] : Forwarding.PASS;
        });
  }

  /**
   * Paimon's scan builder's {@code pushFilters}: Paimon pushes every filter it can convert, as
   * before, but the ones it evaluates completely on partition values ({@code reservedFilters},
   * which it would drop from Spark's post-scan filters) are returned too, so Spark keeps a
   * Filter above the scan. The scan reports the whole snapshot's statistics and that Filter's
   * estimate narrows them to the partitions read, as for a partition filter on Delta or Hudi;
   * without it the whole snapshot's row count would stand for a pruned scan. Spark then
   * evaluates those filters again on rows of partitions that satisfy them (cheap, always true).
   */
  static Object keepPartitionFilters(Object builder, java.lang.reflect.Method method,
      Object[] args, boolean[] kept) throws Throwable {
    Filter[] postScan;
    try {
      postScan = (Filter[]) method.invoke(builder, args);
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw e.getCause();
    }
    try {
      Filter[] reserved = (Filter[]) Reflect.call(builder, "reservedFilters");
      if (reserved == null || reserved.length == 0) {
        kept[0] = true;
        return postScan;
      }
      Filter[] all = java.util.Arrays.copyOf(postScan, postScan.length + reserved.length);
      System.arraycopy(reserved, 0, all, postScan.length, reserved.length);
      kept[0] = true;
      return all;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      LOG.warn("lakestats: Paimon's partition filters not kept: {}", e.toString());
      return postScan;
    }
  }

  /** lakestats' statistics of the one snapshot the scan's splits come from, or null. */
  private static Statistics lookup(Scan scan, Map<String, String> roots, Configuration hadoop,
      java.util.Set<String> histograms, boolean kept) {
    try {
      Object reserved = Reflect.call(scan, "reservedFilters");
      if (!kept && !(reserved instanceof scala.collection.Seq
          && ((scala.collection.Seq<?>) reserved).isEmpty())) {
        return null; // partition filters Paimon evaluates itself, no Filter left above the scan
      }
      String snapshot = null;
      for (Object split : (Object[]) Reflect.call(scan, "getOriginSplits")) {
        String id = Reflect.call(split, "snapshotId").toString();
        if (snapshot != null && !snapshot.equals(id)) {
          return null;
        }
        snapshot = id;
      }
      if (snapshot == null) {
        return null; // nothing to read (an empty table)
      }
      String location = Reflect.call(Reflect.call(scan, "table"), "location").toString();
      SnapshotStatistics stats =
          Sidecars.find(Sidecars.root(location, roots), location, snapshot, hadoop);
      return stats == null ? null
          : Sidecars.use(stats, s -> s.scanStatistics(scan.readSchema(), histograms));
    } catch (Exception | LinkageError e) {
      LOG.warn("lakestats: no statistics for a Paimon scan: {}", e.toString());
      return null;
    }
  }
}
