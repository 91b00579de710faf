package io.lakestats.spark;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier$;
import org.apache.spark.sql.catalyst.catalog.CatalogStatistics;
import org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat;
import org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat$;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTableType$;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import java.util.List;
import org.apache.spark.sql.internal.SQLConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;
import scala.runtime.AbstractPartialFunction;

/**
 * Gives each scan of an analyzed table lakestats' statistics for the snapshot it reads.
 *
 * <ul>
 *   <li>Iceberg (DataSource V2): the rule runs before Spark's push-down builds the scan, so it
 *       gives the relation a table that is Iceberg's own in every respect ({@link Forwarding})
 *       except that its scan builder's {@code build()} returns Iceberg's scan wrapped to report
 *       lakestats' statistics from {@code estimateStatistics}, once the scan knows its
 *       snapshot; Spark's {@code DataSourceV2ScanRelation.computeStats} turns them into plan
 *       statistics ({@code transformV2Stats}: row count, and per column distinct count, min,
 *       max, nulls, lengths, histogram).</li>
 *   <li>Delta (a V1 {@code LogicalRelation} over Delta's file index, whose {@code computeStats}
 *       reads only its catalog table's statistics): the relation gets a catalog table (its own,
 *       or a minimal external one for a path) carrying {@code CatalogStatistics}, as
 *       {@code ANALYZE TABLE ... FOR ALL COLUMNS} would have stored them.</li>
 *   <li>Paimon (DataSource V2): the same forwarding table and scan builder as Iceberg's; the
 *       scan looks its statistics up when Spark first asks for them, and the filters Paimon
 *       evaluates on partition values stay in a Filter above the scan ({@link PaimonScans}).</li>
 *   <li>Hudi (Spark 3.5: a V1 {@code LogicalRelation} over {@code HoodieFileIndex}, or over
 *       the merge-on-read snapshot relation that merges log files into base files): as
 *       Delta's, for the time-travel instant or the latest completed commit. Hudi's own
 *       partition pruning (an operator-optimization rule, before this one) replaces the
 *       relation's statistics and keeps the partition filters in a Filter above it: the
 *       whole snapshot's statistics given back here are then narrowed by that Filter's
 *       estimate.</li>
 * </ul>
 *
 * The snapshot is the scan's own (Iceberg's snapshot id, Delta's table version, Hudi's instant,
 * Paimon's snapshot id, time travel included); statistics of another snapshot are never
 * reported. Any failure leaves the plan as it was: statistics are advice, never a reason for a
 * query to fail. A statistics file that cannot be used (damaged, foreign, oversized: {@link
 * Sidecars}) is refused with one warning, and the scan keeps Spark's own estimates.
 */
final class StatisticsRule extends Rule<LogicalPlan> {
  static final String ENABLED = "spark.lakestats.enabled";
  /** {@code location=root,location=root}: tables analyzed with {@code --stats-root}. */
  static final String ROOTS = "spark.lakestats.roots";
  /**
   * {@code false}: no histograms (distinct counts, min/max and the rest only). With it on (the
   * default) a scan gets the histograms of the columns the Filter directly above it reads, and
   * no others: a histogram serves that Filter's estimate. Spark also estimates an equi-join
   * from both keys' histograms when both have one, but never scales a histogram down after a
   * filter or join on other columns: a key's histogram would have a filtered table's join
   * estimated as unfiltered. Joins are estimated from distinct counts, which Spark does scale.
   */
  static final String HISTOGRAMS = "spark.lakestats.histograms";

  private static final Logger LOG = LoggerFactory.getLogger(StatisticsRule.class);
  private static final String ICEBERG_TABLE = "org.apache.iceberg.spark.source.SparkTable";
  private static final String ICEBERG_SCAN = "org.apache.iceberg.spark.source.SparkBatchQueryScan";
  private static final String PAIMON_TABLE = "org.apache.paimon.spark.SparkTable";
  /** Delta's file indexes: their path and version are the snapshot a scan reads. */
  static final java.util.Set<String> DELTA_INDEXES = java.util.Set.of(
      "org.apache.spark.sql.delta.files.TahoeLogFileIndex",
      "org.apache.spark.sql.delta.stats.PreparedDeltaFileIndex");
  /** Hudi's file index (Spark 3.5: copy-on-write, read-optimized and MOR snapshot reads). */
  private static final String HUDI_INDEX = "org.apache.hudi.HoodieFileIndex";
  /**
   * Hudi's merge-on-read snapshot relation (not a {@code HadoopFsRelation}): it reads each file
   * slice's base file merged with its log files, through a {@code HoodieFileIndex} that lists
   * them; its {@code LogicalRelation} reads catalog statistics as any V1 relation does.
   */
  private static final String HUDI_MOR_SNAPSHOT = "org.apache.hudi.MergeOnReadSnapshotRelation";

  private final SparkSession session;

  StatisticsRule(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    SQLConf conf = SQLConf.get();
    if (!Boolean.parseBoolean(conf.getConfString(ENABLED, "true"))) {
      return plan;
    }
    Map<String, String> roots = roots(conf.getConfString(ROOTS, ""));
    boolean histograms = Boolean.parseBoolean(conf.getConfString(HISTOGRAMS, "true"));
    // top down: a Filter directly above a scan is seen first, and names the columns whose
    // histograms the scan gets; the scan it returns is wrapped or marked, left alone below
    return plan.transformDown(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
      @Override
      public boolean isDefinedAt(LogicalPlan node) {
        return isRelation(node) || node instanceof Filter && isRelation(((Filter) node).child());
      }

      @Override
      public LogicalPlan apply(LogicalPlan node) {
        if (node instanceof Filter) {
          Filter filter = (Filter) node;
          LogicalPlan scan = statistics(filter.child(), roots,
              histograms ? filtered(filter) : Set.of());
          Filter out = scan == filter.child() ? filter : new Filter(filter.condition(), scan);
          String[] origin = scan instanceof LogicalRelation ? ServiceEstimates.origin(scan)
              : icebergOrigin(filter.child());
          if (origin != null) {
            // a Delta Filter's question went out earlier, from the operator optimizations
            boolean askedEarly = EarlyQuestions.asks(filter);
            EarlyQuestions.analyzed(origin[0], origin[1]);
            if (!askedEarly) {
              ServiceEstimates.prefetch(out, origin[0], origin[1]);
            }
          }
          return out;
        }
        return statistics(node, roots, Set.of());
      }
    });
  }

  /**
   * {location, snapshot} an Iceberg relation will read (its time-travel snapshot, else the
   * current one of its main branch), or null: what a Filter's question is sent ahead for.
   */
  private static String[] icebergOrigin(LogicalPlan node) {
    try {
      if (!(node instanceof DataSourceV2Relation)) {
        return null;
      }
      Table table = ((DataSourceV2Relation) node).table();
      if (!table.getClass().getName().equals(ICEBERG_TABLE)
          || Reflect.call(table, "branch") != null) {
        return null;
      }
      Object iceberg = Reflect.call(table, "table");
      Object snapshot = Reflect.call(table, "snapshotId");
      if (snapshot == null) {
        Object current = Reflect.call(iceberg, "currentSnapshot");
        snapshot = current == null ? null : Reflect.call(current, "snapshotId");
      }
      return snapshot == null ? null
          : new String[] {(String) Reflect.call(iceberg, "location"), snapshot.toString()};
    } catch (Exception | LinkageError e) {
      return null;
    }
  }

  private static boolean isRelation(LogicalPlan node) {
    return node instanceof DataSourceV2Relation || node instanceof LogicalRelation;
  }

  /** The columns a Filter reads (lower case): the ones that get a histogram. */
  private static Set<String> filtered(Filter filter) {
    Set<String> out = new HashSet<>();
    for (Attribute attribute : Scala.list(filter.condition().references().toSeq())) {
      out.add(attribute.name().toLowerCase(Locale.ROOT));
    }
    return out;
  }

  /** The relation with lakestats' statistics, histograms for {@code histograms} only. */
  private LogicalPlan statistics(LogicalPlan node, Map<String, String> roots,
      Set<String> histograms) {
    try {
      if (node instanceof DataSourceV2Relation) {
        return v2((DataSourceV2Relation) node, roots, histograms);
      }
      return v1((LogicalRelation) node, roots, histograms);
    } catch (Exception | LinkageError e) {
      LOG.warn("lakestats: no statistics for {}: {}", node.nodeName(), e.toString());
      return node;
    }
  }

  private Configuration hadoop() {
    return session.sparkContext().hadoopConfiguration();
  }

  /**
   * An Iceberg table whose scan builder builds scans that report lakestats' statistics (the
   * rule runs before Spark's push-down makes the scan; the snapshot is known only then).
   */
  private LogicalPlan v2(DataSourceV2Relation relation, Map<String, String> roots,
      Set<String> histograms) throws Exception {
    Table table = relation.table();
    String kind = table.getClass().getName();
    if (!kind.equals(ICEBERG_TABLE) && !kind.equals(PAIMON_TABLE)) {
      return relation; // not Iceberg's or Paimon's, or wrapped already
    }
    Configuration hadoop = hadoop();
    Object wrapped = Forwarding.proxy(table, List.of(), (original, method, args) -> {
      if (method.getName().equals("newScanBuilder") && method.getParameterCount() == 1) {
        ScanBuilder builder = (ScanBuilder) method.invoke(original, args);
        boolean[] kept = new boolean[1]; // Paimon's partition filters returned to Spark
        return Forwarding.proxy(builder, List.of(), (b, m, a) -> {
          if (kind.equals(PAIMON_TABLE) && m.getName().equals("pushFilters")
              && m.getParameterCount() == 1) {
            return PaimonScans.keepPartitionFilters(b, m, a, kept);
          }
          if (m.getName().equals("build") && m.getParameterCount() == 0) {
            Scan scan = (Scan) m.invoke(b, a);
            return kind.equals(PAIMON_TABLE)
                ? PaimonScans.withStatistics(scan, roots, hadoop, histograms, kept[0])
                : withStatistics(scan, roots, hadoop, histograms);
          }
          return Forwarding.PASS;
        });
      }
      return Forwarding.PASS;
    });
    return (LogicalPlan) Reflect.copyWith(relation, "table", wrapped);
  }

  /** The scan, reporting lakestats' statistics of its snapshot when there are some. */
  static Scan withStatistics(
      Scan scan, Map<String, String> roots, Configuration hadoop, Set<String> histograms) {
    try {
      if (!scan.getClass().getName().equals(ICEBERG_SCAN)) {
        return scan; // e.g. a pushed-down aggregate's local scan
      }
      Object snapshot = Reflect.call(scan, "snapshotId");
      if (snapshot == null) {
        return scan; // an empty table: no snapshot
      }
      if (filtersSelectPartitions(scan)) {
        return scan; // it reads part of the snapshot, with no Filter left above it
      }
      String location = (String) Reflect.call(Reflect.call(scan, "table"), "location");
      SnapshotStatistics stats =
          Sidecars.find(Sidecars.root(location, roots), location, snapshot.toString(), hadoop);
      Statistics statistics = stats == null ? null
          : Sidecars.use(stats, s -> s.scanStatistics(scan.readSchema(), histograms));
      if (statistics == null) {
        return scan;
      }
      return (Scan) Forwarding.proxy(scan,
          List.of(SupportsReportStatistics.class, LakestatsScan.class), (original, m, a) -> {
            if (m.getParameterCount() != 0) {
              return Forwarding.PASS;
            }
            switch (m.getName()) {
              case "estimateStatistics":
                return statistics;
              case "lakestatsOriginal":
                return original;
              case "lakestatsVersion":
                return stats.version;
              default:
                return Forwarding.PASS;
            }
          });
    } catch (Exception | LinkageError e) {
      LOG.warn("lakestats: no statistics for an Iceberg scan: {}", e.toString());
      return scan;
    }
  }

  /**
   * Whether Iceberg evaluates a pushed filter completely on partition values: Iceberg then
   * drops it from Spark's post-scan filters, so no Filter above the scan would apply its
   * selectivity to the whole snapshot's statistics (they would over-estimate); such a scan keeps
   * Iceberg's own statistics.
   */
  private static boolean filtersSelectPartitions(Scan scan) throws ReflectiveOperationException {
    List<?> filters = (List<?>) Reflect.call(scan, "filters");
    if (filters == null || filters.isEmpty()) {
      return false;
    }
    Object table = Reflect.call(scan, "table");
    Object caseSensitive = Reflect.call(scan, "caseSensitive");
    ClassLoader loader = scan.getClass().getClassLoader();
    Method selects = Class.forName("org.apache.iceberg.expressions.ExpressionUtil", false, loader)
        .getMethod("selectsPartitions",
            Class.forName("org.apache.iceberg.expressions.Expression", false, loader),
            Class.forName("org.apache.iceberg.Table", false, loader), boolean.class);
    for (Object filter : filters) {
      if ((Boolean) selects.invoke(null, filter, table, caseSensitive)) {
        return true;
      }
    }
    return false;
  }

  private LogicalPlan v1(LogicalRelation relation, Map<String, String> roots,
      Set<String> histograms)
      throws Exception {
    if (relation.isStreaming()) {
      return relation;
    }
    Object index;
    if (relation.relation() instanceof HadoopFsRelation) {
      index = ((HadoopFsRelation) relation.relation()).location();
    } else if (relation.relation().getClass().getName().equals(HUDI_MOR_SNAPSHOT)) {
      index = Reflect.call(relation.relation(), "fileIndex"); // base files merged with logs
    } else {
      return relation;
    }
    boolean delta = DELTA_INDEXES.contains(index.getClass().getName());
    if (!delta && !(isA(index, HUDI_INDEX) && hudiSnapshotRead(index))) {
      return relation;
    }
    if (relation.catalogTable().isDefined()
        && relation.catalogTable().get().properties().contains(MARK)) {
      return relation;
    }
    String version = delta ? Reflect.call(index, "version").toString() : hudiInstant(index);
    if (version == null) {
      return relation; // a Hudi table without a completed commit
    }
    String location = (delta ? Reflect.call(index, "path") : Reflect.call(index, "getBasePath"))
        .toString();
    SnapshotStatistics stats =
        Sidecars.find(Sidecars.root(location, roots), location, version, hadoop());
    CatalogStatistics catalogStats = stats == null ? null
        : Sidecars.use(stats, s -> s.catalogStatistics(relation.output(), histograms));
    if (catalogStats == null) {
      return relation;
    }
    CatalogTable table = relation.catalogTable().isDefined()
        ? relation.catalogTable().get()
        : pathTable(location, relation, delta ? "delta" : "hudi");
    table = (CatalogTable) Reflect.copyWith(table, "stats", Option.apply(catalogStats));
    table = (CatalogTable) Reflect.copyWith(table, "properties",
        table.properties().updated(MARK, Long.toString(stats.version))
            .updated(ServiceEstimates.LOCATION, location).updated(ServiceEstimates.SNAPSHOT, version));
    return (LogicalPlan) Reflect.copyWith(relation, "catalogTable", Option.apply(table));
  }

  static final String MARK = "lakestats.statistics.version";

  /** A minimal external catalog table for a path read (it only carries the statistics). */
  private static CatalogTable pathTable(String location, LogicalRelation relation, String provider)
      throws Exception {
    CatalogStorageFormat storage = CatalogStorageFormat$.MODULE$.empty();
    storage = (CatalogStorageFormat) Reflect.copyWith(storage, "locationUri",
        Option.apply(new java.net.URI(location.startsWith("/") ? "file:" + location : location)));
    Constructor<?> constructor = null;
    for (Constructor<?> c : CatalogTable.class.getConstructors()) {
      if (constructor == null || c.getParameterCount() > constructor.getParameterCount()) {
        constructor = c;
      }
    }
    Object[] args = new Object[constructor.getParameterCount()];
    args[0] = TableIdentifier$.MODULE$.apply(
        provider + "_" + Integer.toHexString(location.hashCode()));
    args[1] = CatalogTableType$.MODULE$.EXTERNAL();
    args[2] = storage;
    args[3] = relation.schema();
    for (int i = 4; i < args.length; i++) {
      Method fallback = CatalogTable.class.getMethod("$lessinit$greater$default$" + (i + 1));
      args[i] = fallback.invoke(null);
    }
    CatalogTable table = (CatalogTable) constructor.newInstance(args);
    return (CatalogTable) Reflect.copyWith(table, "provider", Option.apply(provider));
  }

  /**
   * The Hudi instant a file index reads: the time-travel instant ({@code as.of.instant}) when
   * one is given, else the latest completed commit of its timeline (what lakestats names that
   * snapshot: the instant's timestamp as a number). Null without a completed commit.
   */
  private static String hudiInstant(Object index) throws ReflectiveOperationException {
    Object specified = field(index, "specifiedQueryInstant");
    if (specified != null && (Boolean) Reflect.call(specified, "isPresent")) {
      return Reflect.call(specified, "get").toString();
    }
    Object latest = Reflect.call(index, "getLatestCompletedInstant");
    if (!(Boolean) Reflect.call(latest, "isPresent")) {
      return null;
    }
    return Reflect.call(Reflect.call(latest, "get"), "getTimestamp").toString();
  }

  /**
   * Whether a Hudi file index reads the table's snapshot as lakestats reads it: not an
   * incremental query, and on a merge-on-read table a snapshot query that includes the log
   * files. A read-optimized read of a merge-on-read table sees only base files, not the rows the
   * snapshot's statistics describe, so it keeps Spark's defaults (on a copy-on-write table the
   * two are the same files).
   */
  private static boolean hudiSnapshotRead(Object index) throws ReflectiveOperationException {
    Object queryType = field(index, "queryType");
    if (queryType == null || queryType.toString().equals("INCREMENTAL")) {
      return false;
    }
    Object tableType = Reflect.call(field(index, "metaClient"), "getTableType");
    if (tableType.toString().equals("COPY_ON_WRITE")) {
      return true;
    }
    return queryType.toString().equals("SNAPSHOT")
        && (Boolean) Reflect.call(index, "includeLogFiles");
  }

  private static Object field(Object target, String name) throws ReflectiveOperationException {
    for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
      try {
        java.lang.reflect.Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
      } catch (NoSuchFieldException e) {
        // look further up
      }
    }
    return null;
  }

  /** Whether {@code value}'s class or a superclass has this name (format classes not linked). */
  private static boolean isA(Object value, String className) {
    for (Class<?> c = value.getClass(); c != null; c = c.getSuperclass()) {
      if (c.getName().equals(className)) {
        return true;
      }
    }
    return false;
  }

  private static Map<String, String> roots(String setting) {
    Map<String, String> out = new HashMap<>();
    for (String pair : setting.split(",")) {
      int at = pair.indexOf('=');
      if (at > 0) {
        out.put(pair.substring(0, at).trim(), pair.substring(at + 1).trim());
      }
    }
    return out;
  }
}
