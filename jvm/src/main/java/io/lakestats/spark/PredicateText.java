package io.lakestats.spark;

import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BinaryExpression;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.Contains;
import org.apache.spark.sql.catalyst.expressions.EndsWith;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Like;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.StartsWith;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * A Catalyst filter condition as the SQL text {@code lakestats estimate} reads: columns
 * double-quoted, literals as the column's type writes them (dates and timestamps as quoted
 * text, timestamps in UTC), {@code LIKE} with an escape character only when the pattern needs
 * one. Spark's optimizer rewrites a prefix {@code LIKE} into {@code StartsWith} (and a suffix or
 * infix one into {@code EndsWith} / {@code Contains}): those are written back as {@code LIKE}.
 * A condition with anything else (a function, a cast left in place, two columns compared, a
 * subquery) has no text: {@link #of} returns null and the caller keeps Spark's own estimate of
 * that part.
 */
final class PredicateText {
  private static final DateTimeFormatter TIMESTAMP =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS");

  private PredicateText() {}

  /** The condition as lakestats' SQL, or null when some part of it has no such text. */
  static String of(Expression e) {
    if (e instanceof And) {
      return both("AND", ((And) e).left(), ((And) e).right());
    }
    if (e instanceof Or) {
      return both("OR", ((Or) e).left(), ((Or) e).right());
    }
    if (e instanceof Not) {
      String inner = of(((Not) e).child());
      return inner == null ? null : "NOT (" + inner + ")";
    }
    if (e instanceof IsNull || e instanceof IsNotNull) {
      String column = column(e.children().head());
      return column == null ? null
          : column + (e instanceof IsNull ? " IS NULL" : " IS NOT NULL");
    }
    if (e instanceof BinaryComparison) {
      return comparison((BinaryComparison) e);
    }
    if (e instanceof In) {
      In in = (In) e;
      List<String> values = new ArrayList<>();
      for (Expression item : Scala.list(in.list())) {
        if (!(item instanceof Literal)) {
          return null;
        }
        values.add(((Literal) item).value() == null ? "NULL" : literal((Literal) item));
      }
      return inList(in.value(), values);
    }
    if (e instanceof InSet) {
      InSet in = (InSet) e;
      List<String> values = new ArrayList<>();
      DataType type = in.child().dataType();
      scala.collection.Iterator<Object> it = in.hset().iterator();
      while (it.hasNext()) {
        Object value = it.next();
        values.add(value == null ? "NULL" : value(value, type));
      }
      return inList(in.child(), values);
    }
    if (e instanceof Like) {
      Like like = (Like) e;
      String pattern = text(like.right());
      return pattern == null ? null : like(like.left(), tokens(pattern, like.escapeChar()));
    }
    if (e instanceof StartsWith || e instanceof EndsWith || e instanceof Contains) {
      BinaryExpression sides = (BinaryExpression) e;
      String part = text(sides.right());
      if (part == null) {
        return null;
      }
      List<String> tokens = new ArrayList<>();
      if (!(e instanceof StartsWith)) {
        tokens.add("%");
      }
      for (char c : part.toCharArray()) {
        tokens.add("=" + c);
      }
      if (!(e instanceof EndsWith)) {
        tokens.add("%");
      }
      return like(sides.left(), tokens);
    }
    return null;
  }

  private static String both(String op, Expression left, Expression right) {
    String l = of(left);
    String r = l == null ? null : of(right);
    return r == null ? null : "(" + l + ") " + op + " (" + r + ")";
  }

  private static String comparison(BinaryComparison c) {
    String op;
    if (c instanceof EqualTo || c instanceof EqualNullSafe) {
      op = "=";
    } else if (c instanceof LessThan) {
      op = "<";
    } else if (c instanceof LessThanOrEqual) {
      op = "<=";
    } else if (c instanceof GreaterThan) {
      op = ">";
    } else if (c instanceof GreaterThanOrEqual) {
      op = ">=";
    } else {
      return null;
    }
    Expression left = c.left();
    Expression right = c.right();
    if (left instanceof Literal && !(right instanceof Literal)) {
      Expression swap = left;
      left = right;
      right = swap;
      op = op.replace('<', '!').replace('>', '<').replace('!', '>');
    }
    if (!(right instanceof Literal) || ((Literal) right).value() == null) {
      return null;
    }
    String column = column(left);
    String value = literal((Literal) right);
    return column == null || value == null ? null : column + " " + op + " " + value;
  }

  private static String inList(Expression subject, List<String> values) {
    String column = column(subject);
    if (column == null || values.isEmpty() || values.contains(null)) {
      return null;
    }
    return column + " IN (" + String.join(", ", values) + ")";
  }

  private static String column(Expression e) {
    if (!(e instanceof AttributeReference)) {
      return null;
    }
    return "\"" + ((AttributeReference) e).name().replace("\"", "\"\"") + "\"";
  }

  private static String literal(Literal literal) {
    return value(literal.value(), literal.dataType());
  }

  /** A value of Spark's internal form (UTF8String, days, microseconds, Decimal) as SQL. */
  static String value(Object value, DataType type) {
    if (type instanceof ByteType || type instanceof ShortType || type instanceof IntegerType
        || type instanceof LongType) {
      return value.toString();
    }
    if (type instanceof FloatType || type instanceof DoubleType) {
      double d = ((Number) value).doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) {
        return null;
      }
      String shortest = type instanceof FloatType ? Float.toString((Float) value)
          : Double.toString(d);
      return new BigDecimal(shortest).toPlainString();
    }
    if (type instanceof DecimalType) {
      return ((Decimal) value).toJavaBigDecimal().toPlainString();
    }
    if (type instanceof StringType) {
      return quoted(value.toString());
    }
    if (type instanceof BooleanType) {
      return (Boolean) value ? "TRUE" : "FALSE";
    }
    if (type instanceof DateType) {
      return quoted(LocalDate.ofEpochDay((Integer) value).toString());
    }
    if (type instanceof TimestampType || type instanceof TimestampNTZType) {
      long micros = (Long) value;
      LocalDateTime utc = LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1_000_000L),
          (int) Math.floorMod(micros, 1_000_000L) * 1000, ZoneOffset.UTC);
      return quoted(TIMESTAMP.format(utc));
    }
    return null;
  }

  private static String quoted(String text) {
    return "'" + text.replace("'", "''") + "'";
  }

  private static String text(Expression e) {
    if (!(e instanceof Literal) || ((Literal) e).value() == null
        || !(e.dataType() instanceof StringType)) {
      return null;
    }
    return ((Literal) e).value().toString();
  }

  /** A Spark LIKE pattern as tokens: "%", "_", or "=" and one literal character. */
  private static List<String> tokens(String pattern, char escape) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < pattern.length(); i++) {
      char c = pattern.charAt(i);
      if (c == escape && i + 1 < pattern.length()) {
        out.add("=" + pattern.charAt(++i));
      } else if (c == '%' || c == '_') {
        out.add(String.valueOf(c));
      } else {
        out.add("=" + c);
      }
    }
    return out;
  }

  /** {@code column LIKE 'pattern'}, with an escape character that the text does not use. */
  private static String like(Expression subject, List<String> tokens) {
    String column = column(subject);
    if (column == null) {
      return null;
    }
    StringBuilder literal = new StringBuilder();
    boolean escaping = false;
    for (String token : tokens) {
      if (token.length() == 2 && (token.charAt(1) == '%' || token.charAt(1) == '_')) {
        escaping = true;
      }
      if (token.length() == 2) {
        literal.append(token.charAt(1));
      }
    }
    char escape = 0;
    if (escaping) {
      for (char candidate : "#!~^|@".toCharArray()) {
        if (literal.indexOf(String.valueOf(candidate)) < 0) {
          escape = candidate;
          break;
        }
      }
      if (escape == 0) {
        return null;
      }
    }
    StringBuilder pattern = new StringBuilder();
    for (String token : tokens) {
      if (token.length() == 1) {
        pattern.append(token);
      } else {
        char c = token.charAt(1);
        if (escape != 0 && (c == '%' || c == '_')) {
          pattern.append(escape);
        }
        pattern.append(c);
      }
    }
    String sql = column + " LIKE " + quoted(pattern.toString());
    return escape == 0 ? sql : sql + " ESCAPE '" + escape + "'";
  }
}
