package io.lakestats.spark;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asks the lakestats service ({@code lakestats serve}) how many rows a predicate keeps in one
 * snapshot of the table at a location ({@code POST /api/estimate}, the answer {@code lakestats
 * estimate} gives) and how many distinct combinations some columns have ({@code POST
 * /api/group-distinct}, {@code lakestats estimate --group-by}). One estimator of record, not a
 * copy of it in Java.
 *
 * <p>A plan never waits long and never fails for it: each question has a time limit; a
 * service that is down, slow or answers with a server error is not asked again for {@link
 * #PAUSE_MILLIS} (one warning), and the filter keeps Spark's own estimate. A question the
 * service refuses (a table it does not serve, a predicate it cannot estimate) is remembered as
 * refused. Answers are kept for a minute per service, location, snapshot and predicate (a
 * query is often planned more than once: adaptive execution re-plans it).
 *
 * <p>A question can be sent ahead ({@link #prefetchRows}): the optimizer's early rule writes it
 * to a connection of its own ({@link ServiceConnection}) without waiting, the last rule then
 * reads its answer from that connection, arrived meanwhile (the optimizer's batches in between
 * take longer than a round trip), so planning does not wait on the network.
 */
final class EstimatesClient {
  static final long PAUSE_MILLIS = 30_000;
  private static final long KEEP_MILLIS = 60_000;
  private static final int KEEP = 10_000;
  /** Questions sent ahead and not collected, at most (each holds a connection). */
  private static final int PENDING = 64;
  /** Idle connections kept, at most, and for how long (the service closes them after 5 s). */
  private static final int IDLE = 8;
  private static final long IDLE_MILLIS = 2_000;
  private static final Logger LOG = LoggerFactory.getLogger(EstimatesClient.class);
  private static final JsonFactory JSON = new JsonFactory();
  private static final Pattern FILE_SCHEME = Pattern.compile("^file:(//)?");
  private static final Pattern TRAILING_SLASHES = Pattern.compile("/+$");
  private static final Map<String, EstimatesClient> CLIENTS = new ConcurrentHashMap<>();
  /** A refused question's answer in the cache. */
  private static final double REFUSED = Double.NaN;

  private final String url;
  private final URI base;
  private volatile long pausedUntil;
  private final Deque<ServiceConnection> idle = new ArrayDeque<>();
  /** Questions sent ahead and not yet collected: the connection their answer arrives on. */
  private final Map<String, ServiceConnection> pending =
      new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, ServiceConnection> eldest) {
          if (size() > PENDING) { // never collected (a plan that changed shape)
            eldest.getValue().close();
            return true;
          }
          return false;
        }
      };
  private final Map<String, double[]> answers = new LinkedHashMap<>(64, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, double[]> eldest) {
      return size() > KEEP;
    }
  };

  private EstimatesClient(String url) {
    this.url = url.replaceAll("/+$", "");
    this.base = URI.create(this.url);
  }

  /** The client of this service (one per URL: its connections are kept open). */
  static EstimatesClient of(String url) {
    return CLIENTS.computeIfAbsent(url, EstimatesClient::new);
  }

  /**
   * The rows {@code predicate} keeps in {@code snapshot} of the table at {@code location}, or
   * null: the service refused, failed, was too slow, or is paused after a failure.
   */
  Double rows(String location, String snapshot, String predicate, String token,
      long timeoutMillis) {
    return answer(location, snapshot, "where", predicate, token, timeoutMillis);
  }

  /**
   * The distinct value combinations of {@code columns} (two or more, comma-separated) in that
   * snapshot ({@code POST /api/group-distinct}), or null as for {@link #rows}.
   */
  Double distinct(String location, String snapshot, String columns, String token,
      long timeoutMillis) {
    return answer(location, snapshot, "columns", columns, token, timeoutMillis);
  }

  /** Sends the question {@link #rows} will ask, without waiting for its answer. */
  void prefetchRows(String location, String snapshot, String predicate, String token,
      long timeoutMillis) {
    String key = key(location, snapshot, "where", predicate);
    if (System.currentTimeMillis() < pausedUntil || kept(key, System.currentTimeMillis()) != null) {
      return;
    }
    synchronized (pending) {
      if (pending.containsKey(key)) {
        return;
      }
    }
    ServiceConnection connection = null;
    try {
      connection = borrow((int) timeoutMillis);
      connection.send(path("where"), body(location, snapshot, "where", predicate), token);
      ServiceConnection replaced;
      synchronized (pending) {
        replaced = pending.put(key, connection);
      }
      if (replaced != null) {
        replaced.close();
      }
    } catch (Exception e) {
      if (connection != null) {
        connection.close();
      }
      LOG.debug("lakestats: a question not sent ahead: {}", e.toString());
    }
  }

  /**
   * A question's key: a local location however it is spelled ({@code file:/t}, {@code
   * file:///t}, {@code /t}: the rule before push-down may know a table by another spelling
   * than its scan), the snapshot, the kind and the question.
   */
  private static String key(String location, String snapshot, String kind, String asked) {
    String where = TRAILING_SLASHES.matcher(FILE_SCHEME.matcher(location).replaceFirst(""))
        .replaceAll("");
    return where + "\n" + snapshot + "\n" + kind + "\n" + asked;
  }

  /** The kept answer of a question asked within the last minute, or null. */
  private double[] kept(String key, long now) {
    synchronized (answers) {
      double[] kept = answers.get(key);
      return kept != null && now - (long) kept[1] < KEEP_MILLIS ? kept : null;
    }
  }

  private Double answer(String location, String snapshot, String kind, String asked,
      String token, long timeoutMillis) {
    String key = key(location, snapshot, kind, asked);
    long now = System.currentTimeMillis();
    double[] kept = kept(key, now);
    if (kept != null) {
      return Double.isNaN(kept[0]) ? null : kept[0];
    }
    ServiceConnection sent;
    synchronized (pending) {
      sent = pending.remove(key);
    }
    if (now < pausedUntil) {
      if (sent != null) {
        sent.close();
      }
      return null;
    }
    double answer;
    try {
      ServiceConnection.Answer response = ask(sent, kind,
          body(location, snapshot, kind, asked), token, now + timeoutMillis);
      answer = read(response, kind, asked);
    } catch (Exception e) {
      pausedUntil = System.currentTimeMillis() + PAUSE_MILLIS;
      synchronized (pending) {
        pending.values().forEach(ServiceConnection::close);
        pending.clear();
      }
      LOG.warn("lakestats: the service at {} did not answer ({}); filters keep Spark's own "
          + "estimates for {} s", url, e.toString(), PAUSE_MILLIS / 1000);
      return null;
    }
    synchronized (answers) {
      answers.put(key, new double[] {answer, now});
    }
    return Double.isNaN(answer) ? null : answer;
  }

  /**
   * The answer to a question: read from the connection it was sent ahead on, else sent now.
   * A kept connection the service closed meanwhile gets the question again on a new one.
   */
  private ServiceConnection.Answer ask(ServiceConnection sent, String kind, byte[] body,
      String token, long deadline) throws IOException {
    ServiceConnection connection = sent;
    for (int attempt = 0; ; attempt++) {
      boolean stale = false;
      try {
        if (connection == null) {
          connection = borrow(remaining(deadline));
          connection.send(path(kind), body, token);
        }
        stale = connection.reused;
        ServiceConnection.Answer answer = connection.read(remaining(deadline));
        giveBack(connection);
        return answer;
      } catch (SocketTimeoutException e) {
        connection.close();
        throw e;
      } catch (IOException e) {
        if (connection != null) {
          stale = stale || connection.reused;
          connection.close();
        }
        connection = null;
        if (!stale || attempt > 0) {
          throw e;
        }
      }
    }
  }

  private static int remaining(long deadline) throws SocketTimeoutException {
    long left = deadline - System.currentTimeMillis();
    if (left <= 0) {
      throw new SocketTimeoutException("the time limit passed");
    }
    return (int) Math.min(left, Integer.MAX_VALUE);
  }

  /** An idle kept connection (the most recently used), else a new one. */
  private ServiceConnection borrow(int timeoutMillis) throws IOException {
    long now = System.currentTimeMillis();
    synchronized (idle) {
      for (ServiceConnection connection = idle.pollFirst(); connection != null;
          connection = idle.pollFirst()) {
        if (now - connection.idleSince < IDLE_MILLIS) {
          return connection;
        }
        connection.close();
      }
    }
    return ServiceConnection.open(base, timeoutMillis);
  }

  private void giveBack(ServiceConnection connection) {
    if (connection.keep) {
      synchronized (idle) {
        if (idle.size() < IDLE) {
          idle.addFirst(connection);
          return;
        }
      }
    }
    connection.close();
  }

  private String path(String kind) {
    String prefix = base.getRawPath() == null ? "" : base.getRawPath();
    return prefix + (kind.equals("where") ? "/api/estimate" : "/api/group-distinct");
  }

  /**
   * A question's body, written by hand: a planner sends one per Filter, and a few lines of
   * text cost less than building and serializing a JSON tree (bench/filter_estimates.py).
   */
  private static byte[] body(String location, String snapshot, String kind, String asked) {
    StringBuilder out = new StringBuilder(96 + asked.length());
    out.append("{\"location\":");
    quoted(out, location);
    out.append(",\"snapshot_id\":");
    // a Parquet directory: statistics of no snapshot
    out.append(snapshot.isEmpty() ? "null" : Long.toString(Long.parseLong(snapshot)));
    if (kind.equals("where")) {
      out.append(",\"where\":[");
      quoted(out, asked);
      out.append(']');
    } else {
      out.append(",\"columns\":[");
      String[] columns = asked.split(",");
      for (int i = 0; i < columns.length; i++) {
        if (i > 0) {
          out.append(',');
        }
        quoted(out, columns[i]);
      }
      out.append(']');
    }
    return out.append('}').toString().getBytes(StandardCharsets.UTF_8);
  }

  /** {@code text} as a JSON string (RFC 8259: quote, backslash and control characters escaped). */
  private static void quoted(StringBuilder out, String text) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    out.append('"');
  }

  /** The count in an answer; NaN when the service refused the question (a 4xx). */
  private static double read(ServiceConnection.Answer response, String kind, String asked)
      throws IOException {
    int status = response.status();
    if (status >= 500) {
      throw new IllegalStateException("HTTP " + status);
    }
    if (status != 200) {
      LOG.debug("lakestats: no answer for {}: {}", asked,
          new String(response.body(), StandardCharsets.UTF_8));
      return REFUSED;
    }
    double count = kind.equals("where") ? firstRowCount(response.body())
        : topLevelNumber(response.body(), "distinct_count");
    if (!(count >= 0)) {
      throw new IllegalStateException("an answer without a count");
    }
    return count;
  }

  /**
   * {@code estimates[0].row_count} of an estimate's answer, or NaN: read as a stream of tokens,
   * without building the document's tree.
   */
  private static double firstRowCount(byte[] body) throws IOException {
    try (JsonParser parser = JSON.createParser(body)) {
      return parser.nextToken() == JsonToken.START_OBJECT && seek(parser, "estimates")
          && parser.currentToken() == JsonToken.START_ARRAY
          && parser.nextToken() == JsonToken.START_OBJECT && seek(parser, "row_count")
          ? number(parser) : Double.NaN;
    }
  }

  /** The number at {@code field} of an answer's top level, or NaN. */
  private static double topLevelNumber(byte[] body, String field) throws IOException {
    try (JsonParser parser = JSON.createParser(body)) {
      return parser.nextToken() == JsonToken.START_OBJECT && seek(parser, field)
          ? number(parser) : Double.NaN;
    }
  }

  /** Moves from an object's start to the value of its {@code field}; false if it has none. */
  private static boolean seek(JsonParser parser, String field) throws IOException {
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String name = parser.currentName();
      parser.nextToken();
      if (name.equals(field)) {
        return true;
      }
      parser.skipChildren();
    }
    return false;
  }

  private static double number(JsonParser parser) throws IOException {
    return parser.currentToken().isNumeric() ? parser.getDoubleValue() : Double.NaN;
  }
}
