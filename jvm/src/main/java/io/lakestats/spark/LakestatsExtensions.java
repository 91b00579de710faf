package io.lakestats.spark;

import org.apache.spark.sql.SparkSessionExtensions;
import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=io.lakestats.spark.LakestatsExtensions}: an optimizer rule, run
 * with the pre-CBO rules (after the operator optimizations, just before filter and projection
 * push-down builds the scans, and so before join reordering and every rule that reads
 * statistics), that gives each scan of an analyzed Iceberg, Delta, Hudi or Paimon table lakestats'
 * statistics for the snapshot it reads ({@link StatisticsRule}); and, when a lakestats service
 * is named ({@code spark.lakestats.estimates.url}), a rule after push-down (and in adaptive
 * execution's re-optimization) that gives each Filter over such a scan lakestats' estimate of
 * its rows ({@link ServiceEstimates}), whose question the first rule already sent ahead (for a
 * Delta scan, a rule among the operator optimizations sends it earlier still: {@link
 * EarlyQuestions}).
 */
public final class LakestatsExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectPreCBORule(session -> {
      ServiceEstimates.install(session);
      return new StatisticsRule(session);
    });
    extensions.injectRuntimeOptimizerRule(session -> new ServiceEstimates(false));
    extensions.injectOptimizerRule(session -> new EarlyQuestions());
    return BoxedUnit.UNIT;
  }
}
