package io.lakestats.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.spark.sql.catalyst.catalog.CatalogColumnStat;
import org.apache.spark.sql.catalyst.catalog.CatalogColumnStat$;
import org.apache.spark.sql.catalyst.catalog.CatalogStatistics;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.plans.logical.ColumnStat;
import org.apache.spark.sql.catalyst.plans.logical.Histogram;
import org.apache.spark.sql.catalyst.plans.logical.HistogramBin;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.colstats.ColumnStatistics;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.math.BigInt;

/**
 * One lakestats statistics version for one table snapshot, as the Python side wrote it for
 * Spark ({@code lakestats/interop/spark_statistics.py}): the row count, the data size and,
 * per column, the property map Spark's own {@code CatalogColumnStat.fromMap} parses (what
 * {@code ANALYZE TABLE} would store) with the equi-height histogram's bins beside it.
 */
final class SnapshotStatistics {
  final String root;
  final String snapshot;
  final long version;
  final long rowCount;
  final long sizeInBytes;
  private final Map<String, JsonNode> columns = new HashMap<>();

  SnapshotStatistics(String root, JsonNode json) {
    this.root = root;
    this.snapshot = json.get("snapshot_id").asText();
    this.version = json.get("version").asLong();
    this.rowCount = json.get("row_count").asLong();
    this.sizeInBytes = json.get("size_in_bytes").asLong();
    for (Iterator<Map.Entry<String, JsonNode>> it = json.get("columns").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> entry = it.next();
      columns.put(entry.getKey(), entry.getValue());
    }
  }

  /** Spark's catalog form of a column's statistics, or none (no statistics, or another type). */
  Optional<CatalogColumnStat> catalogStat(String name, DataType type, boolean histograms) {
    JsonNode column = columns.get(name);
    if (column == null || !compatible(column.get("type").asText(), type)) {
      return Optional.empty();
    }
    Map<String, String> entries = new HashMap<>();
    column.get("stats").fields().forEachRemaining(e -> entries.put(e.getKey(), e.getValue().asText()));
    scala.collection.immutable.Map<String, String> map = Scala.map(entries);
    Option<CatalogColumnStat> parsed = CatalogColumnStat$.MODULE$.fromMap("lakestats", name, map);
    if (parsed.isEmpty()) {
      return Optional.empty();
    }
    CatalogColumnStat stat = parsed.get();
    JsonNode histogram = column.get("histogram");
    if (histograms && histogram != null && !histogram.isNull()) {
      try {
        stat = (CatalogColumnStat) Reflect.copyWith(stat, "histogram", Option.apply(histogram(histogram)));
      } catch (ReflectiveOperationException e) {
        return Optional.of(stat);
      }
    }
    return Optional.of(stat);
  }

  /** The v1 form: a catalog table's statistics (Delta's relation reads them). */
  CatalogStatistics catalogStatistics(
      scala.collection.Seq<AttributeReference> output, boolean histograms) {
    Map<String, CatalogColumnStat> stats = new HashMap<>();
    for (AttributeReference attribute : Scala.list(output)) {
      catalogStat(attribute.name(), attribute.dataType(), histograms).ifPresent(s -> stats.put(attribute.name(), s));
    }
    return new CatalogStatistics(
        BigInt.apply(sizeInBytes),
        Option.apply(BigInt.apply(rowCount)),
        Scala.map(stats));
  }

  /** The v2 form: what a scan reading {@code schema} returns from {@code estimateStatistics}. */
  Statistics scanStatistics(StructType schema, boolean histograms) {
    Map<NamedReference, ColumnStatistics> stats = new HashMap<>();
    long rowSize = 8;
    for (StructField field : schema.fields()) {
      Optional<ColumnStat> stat = catalogStat(field.name(), field.dataType(), histograms)
          .map(s -> s.toPlanStat(field.name(), field.dataType()));
      long width = field.dataType().defaultSize();
      if (stat.isPresent()) {
        stats.put(Expressions.column(field.name()), v2(stat.get()));
        if (stat.get().avgLen().isDefined()) {
          width = ((Number) stat.get().avgLen().get()).longValue();
        }
      }
      rowSize += width;
    }
    long size = Math.max(1L, rowSize * rowCount);
    return new Statistics() {
      @Override
      public OptionalLong sizeInBytes() {
        return OptionalLong.of(size);
      }

      @Override
      public OptionalLong numRows() {
        return OptionalLong.of(rowCount);
      }

      @Override
      public Map<NamedReference, ColumnStatistics> columnStats() {
        return stats;
      }
    };
  }

  private static ColumnStatistics v2(ColumnStat stat) {
    OptionalLong distinct = longOf(stat.distinctCount());
    OptionalLong nulls = longOf(stat.nullCount());
    OptionalLong avgLen = longOf(stat.avgLen());
    OptionalLong maxLen = longOf(stat.maxLen());
    Optional<Object> min = Optional.ofNullable(stat.min().isDefined() ? stat.min().get() : null);
    Optional<Object> max = Optional.ofNullable(stat.max().isDefined() ? stat.max().get() : null);
    Optional<org.apache.spark.sql.connector.read.colstats.Histogram> histogram =
        stat.histogram().isDefined() ? Optional.of(v2(stat.histogram().get())) : Optional.empty();
    return new ColumnStatistics() {
      @Override
      public OptionalLong distinctCount() {
        return distinct;
      }

      @Override
      public Optional<Object> min() {
        return min;
      }

      @Override
      public Optional<Object> max() {
        return max;
      }

      @Override
      public OptionalLong nullCount() {
        return nulls;
      }

      @Override
      public OptionalLong avgLen() {
        return avgLen;
      }

      @Override
      public OptionalLong maxLen() {
        return maxLen;
      }

      @Override
      public Optional<org.apache.spark.sql.connector.read.colstats.Histogram> histogram() {
        return histogram;
      }
    };
  }

  private static org.apache.spark.sql.connector.read.colstats.Histogram v2(Histogram histogram) {
    HistogramBin[] bins = histogram.bins();
    org.apache.spark.sql.connector.read.colstats.HistogramBin[] out =
        new org.apache.spark.sql.connector.read.colstats.HistogramBin[bins.length];
    for (int i = 0; i < bins.length; i++) {
      HistogramBin bin = bins[i];
      out[i] = new org.apache.spark.sql.connector.read.colstats.HistogramBin() {
        @Override
        public double lo() {
          return bin.lo();
        }

        @Override
        public double hi() {
          return bin.hi();
        }

        @Override
        public long ndv() {
          return bin.ndv();
        }
      };
    }
    double height = histogram.height();
    return new org.apache.spark.sql.connector.read.colstats.Histogram() {
      @Override
      public double height() {
        return height;
      }

      @Override
      public org.apache.spark.sql.connector.read.colstats.HistogramBin[] bins() {
        return out;
      }
    };
  }

  private static OptionalLong longOf(Option<?> value) {
    if (value.isEmpty()) {
      return OptionalLong.empty();
    }
    Object v = value.get();
    return OptionalLong.of(v instanceof BigInt ? ((BigInt) v).longValue() : ((Number) v).longValue());
  }

  private static Histogram histogram(JsonNode json) {
    List<HistogramBin> bins = new ArrayList<>();
    for (JsonNode bin : json.get("bins")) {
      bins.add(new HistogramBin(number(bin.get(0)), number(bin.get(1)), bin.get(2).asLong()));
    }
    return new Histogram(number(json.get("height")), bins.toArray(new HistogramBin[0]));
  }

  private static double number(JsonNode node) {
    return node.isTextual() ? Double.parseDouble(node.asText()) : node.asDouble();
  }

  /** lakestats' Spark type name (``lakestats.spark.spark_type_of``) against the plan's type. */
  static boolean compatible(String ours, DataType theirs) {
    String name = theirs.typeName(); // integer, long, decimal(10,2), timestamp_ntz, ...
    if (name.startsWith("decimal")) {
      name = "decimal";
    }
    if (name.equals("integer")) {
      name = "int";
    }
    if (ours.equals(name)) {
      return true;
    }
    List<String> integral = List.of("byte", "short", "int", "long");
    return integral.contains(ours) && integral.contains(name);
  }
}
