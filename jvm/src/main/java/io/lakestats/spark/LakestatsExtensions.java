package io.lakestats.spark;

import org.apache.spark.sql.SparkSessionExtensions;
import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=io.lakestats.spark.LakestatsExtensions}: one optimizer rule, run
 * with the pre-CBO rules (after the operator optimizations, just before filter and projection
 * push-down builds the scans, and so before join reordering and every rule that reads
 * statistics), that gives each scan of an analyzed Iceberg, Delta, Hudi or Paimon table lakestats'
 * statistics for the snapshot it reads ({@link StatisticsRule}).
 */
public final class LakestatsExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectPreCBORule(session -> new StatisticsRule(session));
    return BoxedUnit.UNIT;
  }
}
