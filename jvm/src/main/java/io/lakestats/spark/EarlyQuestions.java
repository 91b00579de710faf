package io.lakestats.spark;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.internal.SQLConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;

/**
 * Sends a Filter's question over a Delta scan from the optimizer's operator optimizations,
 * long before the rule after push-down reads its answer ({@link ServiceEstimates}).
 *
 * <p>The rule before push-down sends it too, but a Delta scan (a V1 relation) has no scan
 * building between that rule and the last one, so its question was sent only about a
 * millisecond before its answer was read, and the planner waited for nearly the service's
 * whole round trip (bench/filter_estimates.py); an Iceberg scan's planning in between hides
 * it. Here the condition is not final yet: Spark's {@code InferFiltersFromConstraints} runs
 * after this batch and adds the Filter's constraints the condition and its input do not already
 * hold (the {@code IS NOT NULL} of the columns a comparison reads). So the question asked is
 * the condition with those constraints, as that rule adds them: the question the rule after
 * push-down asks, whose answer it then finds arrived. Only tables whose statistics a rule has
 * found before are asked this early (a table with none would be asked for nothing); a question
 * that turns out different is never read, and the later rules ask their own.
 */
final class EarlyQuestions extends Rule<LogicalPlan> {
  private static final Logger LOG = LoggerFactory.getLogger(EarlyQuestions.class);
  /** Snapshots (location, version) that had statistics when a Filter over them was planned. */
  private static final Set<String> ANALYZED = ConcurrentHashMap.newKeySet();
  private static final int KEEP = 10_000;
  /**
   * On a Filter this rule has visited: the Filter itself. The operator optimizations run to a
   * fixed point, so this rule sees an unchanged Filter (the same instance) several times; its
   * question is built once. A rule that rewrites the Filter copies the tag to a new instance,
   * which is then asked again.
   */
  private static final TreeNodeTag<Filter> ASKED = new TreeNodeTag<>("lakestats.asked");

  /** Remembers that {@code snapshot} of the table at {@code location} has statistics. */
  static void analyzed(String location, String snapshot) {
    if (ANALYZED.size() >= KEEP) {
      ANALYZED.clear();
    }
    ANALYZED.add(location + "\n" + snapshot);
  }

  /** {path, version} of the Delta scan under {@code filter} if its snapshot is known, or null. */
  private static String[] analyzedDelta(Filter filter) throws ReflectiveOperationException {
    String[] origin = deltaOrigin(filter.child());
    return origin != null && ANALYZED.contains(origin[0] + "\n" + origin[1]) ? origin : null;
  }

  /**
   * Whether this rule asks {@code filter}'s question: a Filter over a Delta scan whose snapshot
   * had statistics when planned before, constraint propagation on (the rule before push-down
   * then sends none: over a Delta scan it would arrive only a millisecond before it is read).
   */
  static boolean asks(Filter filter) {
    try {
      return analyzedDelta(filter) != null && SQLConf.get().constraintPropagationEnabled();
    } catch (Exception | LinkageError e) {
      return false;
    }
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    try { // advice only: nothing here may fail a plan
      SQLConf conf = SQLConf.get();
      if (!conf.getConfString(ServiceEstimates.URL, "").isEmpty()
          && Boolean.parseBoolean(conf.getConfString(StatisticsRule.ENABLED, "true"))
          && conf.constraintPropagationEnabled()) {
        visit(plan);
      }
    } catch (Exception | LinkageError e) {
      LOG.debug("lakestats: no question sent early: {}", e.toString());
    }
    return plan;
  }

  private static void visit(LogicalPlan node) throws ReflectiveOperationException {
    if (node instanceof Filter && !asked((Filter) node)) {
      Filter filter = (Filter) node;
      String[] origin = analyzedDelta(filter);
      if (origin != null) {
        ServiceEstimates.prefetch(new Filter(inferred(filter), filter.child()), origin[0],
            origin[1]);
        LOG.debug("lakestats: a Delta filter's question asked early");
      }
      filter.setTagValue(ASKED, filter);
    }
    for (LogicalPlan child : Scala.list(node.children())) {
      visit(child);
    }
  }

  private static boolean asked(Filter filter) {
    Option<Filter> seen = filter.getTagValue(ASKED);
    return seen.isDefined() && seen.get() == filter;
  }

  /** {path, version} of a Delta scan, or null for any other node. */
  private static String[] deltaOrigin(LogicalPlan node) throws ReflectiveOperationException {
    if (!(node instanceof LogicalRelation)
        || !(((LogicalRelation) node).relation() instanceof HadoopFsRelation)) {
      return null;
    }
    Object index = ((HadoopFsRelation) ((LogicalRelation) node).relation()).location();
    if (!StatisticsRule.DELTA_INDEXES.contains(index.getClass().getName())) {
      return null;
    }
    return new String[] {Reflect.call(index, "path").toString(),
        Reflect.call(index, "version").toString()};
  }

  /**
   * The condition as {@code InferFiltersFromConstraints} leaves it: the Filter's constraints
   * that neither its input's constraints nor the condition's conjuncts hold, and the condition.
   */
  private static Expression inferred(Filter filter) {
    Set<Expression> known = new HashSet<>();
    for (Expression e : Scala.list(filter.child().constraints().toSeq())) {
      known.add(e.canonicalized());
    }
    for (Expression e : ServiceEstimates.conjuncts(filter.condition())) {
      known.add(e.canonicalized());
    }
    List<Expression> added = new ArrayList<>();
    for (Expression e : Scala.list(filter.constraints().toSeq())) {
      if (!known.contains(e.canonicalized())) {
        added.add(e);
      }
    }
    Expression out = filter.condition();
    for (Expression e : added) {
      out = new And(e, out);
    }
    return out;
  }
}
