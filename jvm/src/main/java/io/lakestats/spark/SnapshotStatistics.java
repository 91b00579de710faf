package io.lakestats.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
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
import org.apache.spark.sql.types.DataTypes;
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
  static final String FORMAT = "lakestats-spark-statistics";
  static final int FORMAT_VERSION = 1;
  /** The file's identity (path, size, time): what {@link Sidecars} keeps or refuses it by. */
  final String key;
  final String snapshot;
  /** The table location the statistics describe, as the scan names it. */
  final String location;
  final long version;
  final long rowCount;
  final long sizeInBytes;
  private final Map<String, Column> columns = new HashMap<>();

  /** One column's statistics, parsed and checked when the file is read. */
  private static final class Column {
    final String type;
    final CatalogColumnStat stat;
    final Histogram histogram; // null: none

    Column(String type, CatalogColumnStat stat, Histogram histogram) {
      this.type = type;
      this.stat = stat;
      this.histogram = histogram;
    }
  }

  /**
   * The statistics a file holds, checked whole before any is used: the file's format, the
   * version its name carries, the snapshot and the table location the scan reads, and every
   * column's values as Spark parses them. Anything else raises (the file is refused).
   */
  SnapshotStatistics(String key, JsonNode json, long named, String snapshot, String location) {
    this.key = key;
    this.location = location;
    if (!json.isObject() || !FORMAT.equals(text(json, "format"))) {
      throw new IllegalStateException("not a lakestats statistics file for Spark");
    }
    long format = whole(json, "format_version");
    if (format > FORMAT_VERSION) {
      throw new IllegalStateException("format " + format + ", written by a newer lakestats");
    }
    this.version = whole(json, "version");
    if (version != named) {
      throw new IllegalStateException("it holds version " + version + ", its name says " + named);
    }
    this.snapshot = json.path("snapshot_id").asText();
    if (!snapshot.equals(this.snapshot)) {
      throw new IllegalStateException("it describes snapshot " + this.snapshot + ", not "
          + snapshot);
    }
    JsonNode written = json.get("location");
    if (written != null && written.isTextual() && !written.asText().isEmpty()
        && !Sidecars.sameLocation(written.asText()).equals(location)) {
      throw new IllegalStateException("it describes the table at " + written.asText()
          + ", not " + location);
    }
    this.rowCount = whole(json, "row_count");
    this.sizeInBytes = whole(json, "size_in_bytes");
    if (rowCount < 0 || sizeInBytes < 0) {
      throw new IllegalStateException("a negative row count or size");
    }
    JsonNode all = json.get("columns");
    if (all == null || !all.isObject()) {
      throw new IllegalStateException("no columns");
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = all.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> entry = it.next();
      columns.put(entry.getKey(), column(entry.getKey(), entry.getValue()));
    }
  }

  private static Column column(String name, JsonNode json) {
    String type = text(json, "type");
    DataType declared = type == null ? null : TYPES.get(type);
    JsonNode stats = json.get("stats");
    if (declared == null || stats == null || !stats.isObject()) {
      throw new IllegalStateException("column " + name + " has no type or statistics");
    }
    Map<String, String> entries = new HashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = stats.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (!e.getValue().isTextual()) {
        throw new IllegalStateException("column " + name + ": " + e.getKey() + " is no text");
      }
      entries.put(e.getKey(), e.getValue().asText());
    }
    // what CatalogColumnStat.fromMap would fail on (it would log a warning, drop the column)
    Integer.parseInt(required(entries, name + ".version"));
    for (String number : new String[] {"distinctCount", "nullCount", "avgLen", "maxLen"}) {
      String value = entries.get(name + "." + number);
      if (value != null) {
        Long.parseLong(value);
      }
    }
    if (entries.containsKey(name + ".histogram")) {
      throw new IllegalStateException("column " + name + ": a histogram among its statistics");
    }
    Option<CatalogColumnStat> parsed =
        CatalogColumnStat$.MODULE$.fromMap("lakestats", name, Scala.map(entries));
    if (parsed.isEmpty()) {
      throw new IllegalStateException("column " + name + ": statistics Spark cannot parse");
    }
    CatalogColumnStat stat = parsed.get();
    stat.toPlanStat(name, declared); // its min and max as its type reads them
    JsonNode histogram = json.get("histogram");
    return new Column(type, stat,
        histogram == null || histogram.isNull() ? null : histogram(name, histogram));
  }

  /** lakestats' Spark type names (``spark_statistics.spark_type_of``) as Spark's types. */
  private static final Map<String, DataType> TYPES = Map.ofEntries(
      Map.entry("byte", DataTypes.ByteType), Map.entry("short", DataTypes.ShortType),
      Map.entry("int", DataTypes.IntegerType), Map.entry("long", DataTypes.LongType),
      Map.entry("float", DataTypes.FloatType), Map.entry("double", DataTypes.DoubleType),
      Map.entry("decimal", DataTypes.createDecimalType(38, 18)),
      Map.entry("boolean", DataTypes.BooleanType), Map.entry("date", DataTypes.DateType),
      Map.entry("timestamp", DataTypes.TimestampType),
      Map.entry("timestamp_ntz", DataTypes.TimestampNTZType),
      Map.entry("string", DataTypes.StringType), Map.entry("binary", DataTypes.BinaryType));

  private static String required(Map<String, String> entries, String key) {
    String value = entries.get(key);
    if (value == null) {
      throw new IllegalStateException("no " + key);
    }
    return value;
  }

  private static String text(JsonNode json, String field) {
    JsonNode node = json.get(field);
    return node != null && node.isTextual() ? node.asText() : null;
  }

  private static long whole(JsonNode json, String field) {
    JsonNode node = json.get(field);
    if (node == null || !node.isIntegralNumber() || !node.canConvertToLong()) {
      throw new IllegalStateException(field + " is not a whole number");
    }
    return node.asLong();
  }

  /**
   * Spark's catalog form of a column's statistics, or none (no statistics, or another type);
   * its histogram only when {@code histograms} names the column (in lower case).
   */
  Optional<CatalogColumnStat> catalogStat(String name, DataType type, Set<String> histograms) {
    Column column = columns.get(name);
    if (column == null || !compatible(column.type, type)) {
      return Optional.empty();
    }
    CatalogColumnStat stat = column.stat;
    if (column.histogram != null && histograms.contains(name.toLowerCase(Locale.ROOT))) {
      try {
        stat = (CatalogColumnStat) Reflect.copyWith(stat, "histogram",
            Option.apply(column.histogram));
      } catch (ReflectiveOperationException e) {
        return Optional.of(stat);
      }
    }
    return Optional.of(stat);
  }

  /** The v1 form: a catalog table's statistics (Delta's relation reads them). */
  CatalogStatistics catalogStatistics(
      scala.collection.Seq<AttributeReference> output, Set<String> histograms) {
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
  Statistics scanStatistics(StructType schema, Set<String> histograms) {
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
    return new Reported(this, Math.max(1L, rowSize * rowCount), stats);
  }

  /**
   * What a scan's {@code estimateStatistics} returns, knowing which snapshot statistics it came
   * from: the filter estimates ({@link ServiceEstimates}) ask lakestats about that snapshot.
   */
  static final class Reported implements Statistics {
    final SnapshotStatistics origin;
    private final long size;
    private final Map<NamedReference, ColumnStatistics> columns;

    Reported(SnapshotStatistics origin, long size, Map<NamedReference, ColumnStatistics> columns) {
      this.origin = origin;
      this.size = size;
      this.columns = columns;
    }

    @Override
    public OptionalLong sizeInBytes() {
      return OptionalLong.of(size);
    }

    @Override
    public OptionalLong numRows() {
      return OptionalLong.of(origin.rowCount);
    }

    @Override
    public Map<NamedReference, ColumnStatistics> columnStats() {
      return columns;
    }
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

  private static Histogram histogram(String name, JsonNode json) {
    JsonNode all = json.get("bins");
    if (all == null || !all.isArray() || all.size() == 0) {
      throw new IllegalStateException("column " + name + ": a histogram without bins");
    }
    List<HistogramBin> bins = new ArrayList<>();
    double previous = Double.NEGATIVE_INFINITY;
    for (JsonNode bin : all) {
      if (!bin.isArray() || bin.size() != 3 || !bin.get(2).isIntegralNumber()) {
        throw new IllegalStateException("column " + name + ": a histogram bin is not [lo, hi, ndv]");
      }
      double lo = number(bin.get(0));
      double hi = number(bin.get(1));
      if (!(lo <= hi) || lo < previous) { // NaN too
        throw new IllegalStateException("column " + name + ": histogram bins out of order");
      }
      previous = hi;
      bins.add(new HistogramBin(lo, hi, bin.get(2).asLong()));
    }
    double height = number(json.get("height"));
    if (!(height > 0) || Double.isInfinite(height)) {
      throw new IllegalStateException("column " + name + ": a histogram of height " + height);
    }
    return new Histogram(height, bins.toArray(new HistogramBin[0]));
  }

  private static double number(JsonNode node) {
    if (node == null || !(node.isNumber() || node.isTextual())) {
      throw new IllegalStateException("a histogram value is no number");
    }
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
