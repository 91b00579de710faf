package io.lakestats.spark;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeMap;
import org.apache.spark.sql.catalyst.expressions.AttributeMap$;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.optimizer.CostBasedJoinReorder$;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.ColumnStat;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.catalyst.plans.logical.statsEstimation.EstimationUtils$;
import org.apache.spark.sql.catalyst.plans.logical.statsEstimation.FilterEstimation;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.internal.SQLConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;
import scala.math.BigInt;

/**
 * Gives each Filter over a scan that has lakestats' statistics the row count lakestats
 * estimates for its condition and the scan's snapshot ({@link EstimatesClient}: the service's
 * {@code POST /api/estimate}, when {@code spark.lakestats.estimates.url} names one), and each
 * aggregate over such a scan by two or more columns lakestats' count of their distinct
 * combinations ({@code POST /api/group-distinct}: a column group's count where one holds them;
 * Spark multiplies the columns' distinct counts).
 *
 * <p>Spark estimates a Filter itself ({@code FilterEstimation}: one column's histogram or
 * distinct count per condition, conditions multiplied as if independent, no value frequencies
 * for strings) and offers no interface to replace that; what it does read is a plan node's
 * statistics cache. So this rule runs where the plan's scans are final (after filter
 * push-down, in the optimizer's last batch of user rules, and again when adaptive execution
 * re-optimizes a plan) and sets each such Filter's statistics: lakestats' row count (rounded
 * up, as Spark rounds its own), the columns' statistics as Spark's estimate narrows them, with
 * distinct counts scaled to the new row count as Spark scales them, and the size that follows.
 * Joins above are then estimated by Spark from these. Parts of a conjunction that lakestats
 * cannot read (a function, two columns compared) keep Spark's own selectivity, multiplied in.
 *
 * <p>Join reordering ({@code spark.sql.cbo.joinReorder.enabled}, off by default) runs before
 * this rule, from Spark's own filter estimates: a Filter Spark cannot estimate (a LIKE, a
 * string's frequent value) counts as the whole table there, and the join order follows from
 * that. So where join reordering is on, this rule (in the optimizer, not in adaptive
 * execution's re-optimization) reorders the joins once more with Spark's own {@code
 * CostBasedJoinReorder}, now from lakestats' estimates. Dynamic partition pruning and runtime
 * filters, decided in between, keep Spark's estimates (they filter, whatever the join order).
 */
final class ServiceEstimates extends Rule<LogicalPlan> {
  /** The lakestats service to ask, e.g. {@code http://127.0.0.1:8080}; unset: not asked. */
  static final String URL = "spark.lakestats.estimates.url";
  /** A token of the service (when it has tokens), sent as {@code Authorization: Bearer}. */
  static final String TOKEN = "spark.lakestats.estimates.token";
  /** The time limit of one question, in milliseconds (200 by default). */
  static final String TIMEOUT = "spark.lakestats.estimates.timeoutMs";
  /**
   * A V1 relation's catalog table properties naming what its statistics describe: set by the
   * component on Delta and Hudi relations, and by {@code spark-register} on the Parquet tables
   * it registers (an empty snapshot: a directory has none).
   */
  static final String LOCATION = "lakestats.location";
  static final String SNAPSHOT = "lakestats.snapshot";

  private static final Logger LOG = LoggerFactory.getLogger(ServiceEstimates.class);
  /** Marks a plan this rule has reordered: its batch runs rules until the plan stays put. */
  private static final TreeNodeTag<Boolean> REORDERED = new TreeNodeTag<>("lakestats.reordered");
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final List<GarbageCollectorMXBean> COLLECTORS =
      ManagementFactory.getGarbageCollectorMXBeans();

  /** Whether to reorder joins after the estimates: in the optimizer, not in adaptive runs. */
  private final boolean reorderJoins;

  ServiceEstimates(boolean reorderJoins) {
    this.reorderJoins = reorderJoins;
  }

  /**
   * Adds the rule to the session's user-provided optimizer rules ({@code
   * spark.experimental.extraOptimizations}, run after push-down) once: session extensions
   * inject rules only before push-down, where a Filter's scan is not yet known.
   */
  static void install(Object session) {
    try {
      Object experimental = Reflect.call(session, "experimental");
      @SuppressWarnings("unchecked")
      scala.collection.Seq<Rule<LogicalPlan>> rules =
          (scala.collection.Seq<Rule<LogicalPlan>>) Reflect.call(experimental,
              "extraOptimizations");
      List<Rule<LogicalPlan>> current = Scala.list(rules);
      for (Rule<LogicalPlan> rule : current) {
        if (rule.getClass().getName().equals(ServiceEstimates.class.getName())) {
          return;
        }
      }
      scala.collection.immutable.List<Rule<LogicalPlan>> out =
          scala.collection.immutable.List$.MODULE$.empty();
      out = out.$colon$colon(new ServiceEstimates(true));
      for (int i = current.size() - 1; i >= 0; i--) {
        out = out.$colon$colon(current.get(i));
      }
      for (Method m : experimental.getClass().getMethods()) {
        if (m.getName().equals("extraOptimizations_$eq") && m.getParameterCount() == 1) {
          m.invoke(experimental, out);
          return;
        }
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      LOG.warn("lakestats: filter estimates not installed: {}", e.toString());
    }
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    SQLConf conf = SQLConf.get();
    String url = conf.getConfString(URL, "");
    if (url.isEmpty()
        || !Boolean.parseBoolean(conf.getConfString(StatisticsRule.ENABLED, "true"))) {
      return plan;
    }
    try {
      List<LogicalPlan> nodes = new ArrayList<>();
      collect(plan, nodes);
      if (nodes.isEmpty()) {
        return plan;
      }
      long timeout = Long.parseLong(conf.getConfString(TIMEOUT, "200"));
      EstimatesClient client = EstimatesClient.of(url);
      String token = conf.getConfString(TOKEN, "");
      Map<LogicalPlan, Statistics> found = new IdentityHashMap<>();
      for (LogicalPlan node : nodes) {
        Window window = LOG.isDebugEnabled() ? Window.open() : null;
        Statistics stats = node instanceof Filter
            ? estimate((Filter) node, client, token, timeout)
            : groups((Aggregate) node, client, token, timeout);
        if (stats != null) {
          found.put(node, stats);
        }
        if (window != null) { // what the planner spent on it (bench/filter_estimates.py)
          LOG.debug("lakestats: {} estimate {} in {}", node.nodeName().toLowerCase(),
              stats == null ? "kept Spark's" : stats.rowCount().get(), window.spent());
        }
      }
      if (!found.isEmpty()) {
        plan.invalidateStatsCache(); // nodes above derive theirs from these again
        for (Map.Entry<LogicalPlan, Statistics> entry : found.entrySet()) {
          entry.getKey().statsCache_$eq(Option.apply(entry.getValue()));
        }
        if (reorderJoins && conf.cboEnabled() && conf.joinReorderEnabled()
            && plan.getTagValue(REORDERED).isEmpty()) {
          LogicalPlan reordered = CostBasedJoinReorder$.MODULE$.apply(plan);
          reordered.setTagValue(REORDERED, Boolean.TRUE);
          return reordered;
        }
      }
    } catch (Exception | LinkageError e) {
      LOG.warn("lakestats: filters keep Spark's own estimates: {}", e.toString());
    }
    return plan;
  }

  /** Filters directly over a scan with lakestats' statistics, and aggregates over one. */
  private static void collect(LogicalPlan node, List<LogicalPlan> out) {
    if (node instanceof Filter && origin(((Filter) node).child()) != null) {
      out.add(node);
    } else if (node instanceof Aggregate && grouping((Aggregate) node) != null) {
      out.add(node);
    }
    for (LogicalPlan child : Scala.list(node.children())) {
      collect(child, out);
    }
  }

  /**
   * The grouping columns of an aggregate over a scan with lakestats' statistics (through a
   * projection of columns), comma-separated, when there are two or more, else null.
   */
  private static String grouping(Aggregate aggregate) {
    LogicalPlan child = aggregate.child();
    if (child instanceof Project) {
      for (org.apache.spark.sql.catalyst.expressions.NamedExpression e
          : Scala.list(((Project) child).projectList())) {
        if (!(e instanceof AttributeReference)) {
          return null;
        }
      }
      child = ((Project) child).child();
    }
    List<Expression> keys = Scala.list(aggregate.groupingExpressions());
    if (keys.size() < 2 || origin(child) == null) {
      return null;
    }
    List<String> names = new ArrayList<>();
    for (Expression key : keys) {
      if (!(key instanceof AttributeReference)
          || ((AttributeReference) key).name().contains(",")) {
        return null;
      }
      names.add(((AttributeReference) key).name());
    }
    return String.join(",", names);
  }

  /** The scan under an aggregate that {@link #grouping} accepted. */
  private static LogicalPlan scanOf(Aggregate aggregate) {
    LogicalPlan child = aggregate.child();
    return child instanceof Project ? ((Project) child).child() : child;
  }

  /**
   * The aggregate's statistics from lakestats' count of the grouping columns' distinct
   * combinations (a column group's, or bounded by each column's own), or null.
   */
  private static Statistics groups(Aggregate aggregate, EstimatesClient client, String token,
      long timeout) {
    LogicalPlan scan = scanOf(aggregate);
    Statistics before = aggregate.child().stats();
    if (before.rowCount().isEmpty()) {
      return null;
    }
    String[] origin = origin(scan);
    Double distinct = client.distinct(origin[0], origin[1], grouping(aggregate), token, timeout);
    if (distinct == null) {
      return null;
    }
    BigInt count = BigInt.apply(BigDecimal.valueOf(distinct).setScale(0, RoundingMode.CEILING)
        .toBigInteger()).min(before.rowCount().get());
    Map<Attribute, ColumnStat> columns = new LinkedHashMap<>();
    for (Attribute attribute : Scala.list(aggregate.output())) {
      Option<ColumnStat> stat = before.attributeStats().get(attribute);
      if (stat.isDefined()) {
        ColumnStat chosen = stat.get();
        chosen = chosen.distinctCount().isDefined()
            ? withDistinct(chosen, chosen.distinctCount().get().min(count)) : chosen;
        if (chosen != null) {
          columns.put(attribute, chosen);
        }
      }
    }
    AttributeMap<ColumnStat> map = AttributeMap$.MODULE$.apply(Scala.map(columns));
    BigInt size = EstimationUtils$.MODULE$.getOutputSize(aggregate.output(), count, map);
    return new Statistics(size, Option.apply(count), map, false);
  }

  /** {location, snapshot} of the statistics a scan reports, or null. */
  static String[] origin(LogicalPlan scan) {
    if (scan instanceof DataSourceV2ScanRelation) {
      Scan wrapped = ((DataSourceV2ScanRelation) scan).scan();
      if (!Proxy.isProxyClass(wrapped.getClass())
          || !(wrapped instanceof SupportsReportStatistics)) {
        return null; // a scan this component did not wrap
      }
      Object reported = ((SupportsReportStatistics) wrapped).estimateStatistics();
      if (reported instanceof SnapshotStatistics.Reported) {
        SnapshotStatistics stats = ((SnapshotStatistics.Reported) reported).origin;
        return new String[] {stats.location, stats.snapshot};
      }
      return null;
    }
    if (scan instanceof LogicalRelation && ((LogicalRelation) scan).catalogTable().isDefined()) {
      CatalogTable table = ((LogicalRelation) scan).catalogTable().get();
      Option<String> location = table.properties().get(LOCATION);
      Option<String> snapshot = table.properties().get(SNAPSHOT);
      if (location.isDefined() && snapshot.isDefined()) {
        return new String[] {location.get(), snapshot.get()};
      }
    }
    return null;
  }

  /** The Filter's statistics from lakestats' row count, or null (Spark's own then). */
  private static Statistics estimate(Filter filter, EstimatesClient client, String token,
      long timeout) {
    LogicalPlan child = filter.child();
    Statistics before = child.stats();
    if (before.rowCount().isEmpty()) {
      return null;
    }
    List<Expression> rest = new ArrayList<>();
    String predicate = question(filter.condition(), rest);
    if (predicate == null) {
      return null;
    }
    String[] origin = origin(child);
    Double rows = client.rows(origin[0], origin[1], predicate, token, timeout);
    if (rows == null) {
      return null;
    }
    BigDecimal childRows = new BigDecimal(before.rowCount().get().bigInteger());
    BigDecimal kept = BigDecimal.valueOf(rows);
    if (!rest.isEmpty()) { // Spark's selectivity of what lakestats cannot read
      Expression condition = rest.get(0);
      for (int i = 1; i < rest.size(); i++) {
        condition = new And(condition, rest.get(i));
      }
      Option<Statistics> others = FilterEstimation.apply(new Filter(condition, child)).estimate();
      if (others.isDefined() && others.get().rowCount().isDefined()
          && childRows.signum() > 0) {
        kept = kept.multiply(new BigDecimal(others.get().rowCount().get().bigInteger()))
            .divide(childRows, 12, RoundingMode.HALF_UP);
      }
    }
    BigInt count = BigInt.apply(kept.min(childRows).setScale(0, RoundingMode.CEILING)
        .toBigInteger());
    Map<Attribute, ColumnStat> columns = columns(filter, before, count);
    AttributeMap<ColumnStat> map = AttributeMap$.MODULE$.apply(Scala.map(columns));
    BigInt size = EstimationUtils$.MODULE$.getOutputSize(filter.output(), count, map);
    return new Statistics(size, Option.apply(count), map, false);
  }

  /**
   * The columns' statistics after the filter: a column the condition names as Spark's own
   * estimate narrows it (its range, one value for an equality), any other as the scan's with its
   * distinct count scaled to the kept rows as Spark scales it; none above the kept rows.
   */
  private static Map<Attribute, ColumnStat> columns(Filter filter, Statistics before,
      BigInt count) {
    Option<Statistics> spark = FilterEstimation.apply(filter).estimate();
    AttributeSet named = filter.condition().references();
    BigInt rowsBefore = before.rowCount().get();
    Map<Attribute, ColumnStat> out = new LinkedHashMap<>();
    for (Attribute attribute : Scala.list(filter.output())) {
      Option<ColumnStat> stat = before.attributeStats().get(attribute);
      if (stat.isEmpty()) {
        continue;
      }
      ColumnStat chosen = stat.get();
      boolean narrowed = named.contains(attribute) && spark.isDefined()
          && spark.get().attributeStats().get(attribute).isDefined();
      if (narrowed) {
        chosen = spark.get().attributeStats().get(attribute).get();
      }
      if (chosen.distinctCount().isDefined()) {
        BigInt distinct = chosen.distinctCount().get();
        if (!narrowed && count.compare(rowsBefore) < 0 && rowsBefore.signum() > 0) {
          BigInt scaled = BigInt.apply(new BigDecimal(distinct.bigInteger())
              .multiply(new BigDecimal(count.bigInteger()))
              .divide(new BigDecimal(rowsBefore.bigInteger()), 0, RoundingMode.CEILING)
              .toBigInteger());
          distinct = distinct.min(scaled);
        }
        chosen = withDistinct(chosen, distinct.min(count));
      }
      if (chosen != null) {
        out.put(attribute, chosen);
      }
    }
    return out;
  }

  /** The column's statistics with another distinct count, or null when it cannot be set. */
  private static ColumnStat withDistinct(ColumnStat stat, BigInt distinct) {
    try {
      return (ColumnStat) Reflect.copyWith(stat, "distinctCount", Option.apply(distinct));
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }

  /**
   * The predicate lakestats is asked about: the condition's conjuncts it can read, in one
   * order whatever order the plan has them in (push-down may reorder them), or null when it
   * reads none; the others are added to {@code rest}.
   */
  private static String question(Expression condition, List<Expression> rest) {
    List<String> texts = new ArrayList<>();
    for (Expression part : conjuncts(condition)) {
      String text = PredicateText.of(part);
      if (text != null) {
        texts.add(text);
      } else {
        rest.add(part);
      }
    }
    if (texts.isEmpty()) {
      return null;
    }
    Collections.sort(texts);
    return texts.size() == 1 ? texts.get(0) : "(" + String.join(") AND (", texts) + ")";
  }

  /**
   * Sends the question of a Filter over a scan of {@code location}'s {@code snapshot} ahead
   * (from the rule before push-down), when a service is named: the rule after push-down then
   * finds its answer arrived instead of waiting for it.
   */
  static void prefetch(Filter filter, String location, String snapshot) {
    SQLConf conf = SQLConf.get();
    String url = conf.getConfString(URL, "");
    if (url.isEmpty()) {
      return;
    }
    Window window = LOG.isDebugEnabled() ? Window.open() : null;
    try {
      String predicate = question(filter.condition(), new ArrayList<>());
      if (predicate != null) {
        long timeout = Long.parseLong(conf.getConfString(TIMEOUT, "200"));
        EstimatesClient.of(url).prefetchRows(location, snapshot, predicate,
            conf.getConfString(TOKEN, ""), timeout);
      }
    } catch (Exception | LinkageError e) {
      LOG.debug("lakestats: a filter's question not sent ahead: {}", e.toString());
    }
    if (window != null) { // part of what the planner spends per Filter
      LOG.debug("lakestats: filter question sent ahead in {}", window.spent());
    }
  }

  /**
   * A span of the planning thread, for a debug line: its wall time, its time on a core (wall
   * time far above it means the thread waited for one) and the garbage collections inside it
   * (a pause of Spark's jobs' garbage, as Delta's scan planning makes, falls in some; before
   * Java 20 no collector's count includes G1's remark pauses).
   */
  private record Window(long started, long cpu, long collected) {
    static Window open() {
      return new Window(System.nanoTime(), cpuNanos(), collections());
    }

    String spent() {
      return String.format("%d us (%d us on a core, %d garbage collections meanwhile)",
          (System.nanoTime() - started) / 1000, (cpuNanos() - cpu) / 1000,
          collections() - collected);
    }
  }

  /** The planning thread's CPU time so far, or 0 where the JVM does not measure it. */
  private static long cpuNanos() {
    return THREADS.isCurrentThreadCpuTimeSupported() ? THREADS.getCurrentThreadCpuTime() : 0;
  }

  /** Garbage collections of this JVM so far, every collector. */
  private static long collections() {
    long count = 0;
    for (GarbageCollectorMXBean bean : COLLECTORS) {
      count += Math.max(0, bean.getCollectionCount());
    }
    return count;
  }

  static List<Expression> conjuncts(Expression condition) {
    List<Expression> out = new ArrayList<>();
    if (condition instanceof And) {
      out.addAll(conjuncts(((And) condition).left()));
      out.addAll(conjuncts(((And) condition).right()));
    } else {
      out.add(condition);
    }
    return out;
  }
}
