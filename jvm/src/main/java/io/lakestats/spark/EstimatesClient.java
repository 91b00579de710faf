package io.lakestats.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
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
 * <p>A question can be sent ahead ({@link #prefetch}): the optimizer's early rule sends it
 * without waiting, the last rule then finds its answer arrived (the optimizer's batches in
 * between take longer than a round trip), so planning does not wait on the network.
 */
final class EstimatesClient {
  static final long PAUSE_MILLIS = 30_000;
  private static final long KEEP_MILLIS = 60_000;
  private static final int KEEP = 10_000;
  private static final Logger LOG = LoggerFactory.getLogger(EstimatesClient.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<String, EstimatesClient> CLIENTS = new ConcurrentHashMap<>();
  /** A refused question's answer in the cache. */
  private static final double REFUSED = Double.NaN;

  private final String url;
  private final HttpClient http;
  private volatile long pausedUntil;
  /** Questions sent ahead and not yet collected (at most {@link #KEEP}, then dropped). */
  private final Map<String, CompletableFuture<HttpResponse<byte[]>>> pending =
      new ConcurrentHashMap<>();
  private final Map<String, double[]> answers = new LinkedHashMap<>(64, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, double[]> eldest) {
      return size() > KEEP;
    }
  };

  private EstimatesClient(String url, long timeoutMillis) {
    this.url = url.replaceAll("/+$", "");
    this.http = HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofMillis(timeoutMillis))
        .build();
  }

  /** The client of this service (one per URL: its connections are kept open). */
  static EstimatesClient of(String url, long timeoutMillis) {
    return CLIENTS.computeIfAbsent(url + "#" + timeoutMillis,
        k -> new EstimatesClient(url, timeoutMillis));
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
    if (System.currentTimeMillis() < pausedUntil || pending.containsKey(key)
        || kept(key, System.currentTimeMillis()) != null) {
      return;
    }
    if (pending.size() >= KEEP) { // answers never collected (plans that changed shape)
      pending.clear();
    }
    try {
      pending.put(key, http.sendAsync(request(location, snapshot, "where", predicate, token,
          timeoutMillis), HttpResponse.BodyHandlers.ofByteArray()));
    } catch (Exception e) {
      LOG.debug("lakestats: a question not sent ahead: {}", e.toString());
    }
  }

  /**
   * A question's key: a local location however it is spelled ({@code file:/t}, {@code
   * file:///t}, {@code /t}: the rule before push-down may know a table by another spelling
   * than its scan), the snapshot, the kind and the question.
   */
  private static String key(String location, String snapshot, String kind, String asked) {
    String where = location.replaceFirst("^file:(//)?", "").replaceAll("/+$", "");
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
    CompletableFuture<HttpResponse<byte[]>> sent = pending.remove(key);
    if (now < pausedUntil) {
      return null;
    }
    double answer;
    try {
      HttpResponse<byte[]> response = sent != null
          ? sent.get(timeoutMillis, TimeUnit.MILLISECONDS)
          : http.send(request(location, snapshot, kind, asked, token, timeoutMillis),
              HttpResponse.BodyHandlers.ofByteArray());
      answer = read(response, kind, asked);
    } catch (Exception e) {
      if (sent != null) {
        sent.cancel(true);
      }
      pausedUntil = System.currentTimeMillis() + PAUSE_MILLIS;
      pending.clear();
      LOG.warn("lakestats: the service at {} did not answer ({}); filters keep Spark's own "
          + "estimates for {} s", url, e.toString(), PAUSE_MILLIS / 1000);
      return null;
    }
    synchronized (answers) {
      answers.put(key, new double[] {answer, now});
    }
    return Double.isNaN(answer) ? null : answer;
  }

  private HttpRequest request(String location, String snapshot, String kind, String asked,
      String token, long timeoutMillis) throws Exception {
    ObjectNode body = JSON.createObjectNode();
    body.put("location", location);
    if (snapshot.isEmpty()) { // a Parquet directory: statistics of no snapshot
      body.putNull("snapshot_id");
    } else {
      body.put("snapshot_id", Long.parseLong(snapshot));
    }
    String route;
    if (kind.equals("where")) {
      body.putArray("where").add(asked);
      route = "/api/estimate";
    } else {
      com.fasterxml.jackson.databind.node.ArrayNode columns = body.putArray("columns");
      for (String column : asked.split(",")) {
        columns.add(column);
      }
      route = "/api/group-distinct";
    }
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url + route))
        .timeout(Duration.ofMillis(timeoutMillis))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)));
    if (token != null && !token.isEmpty()) {
      request.header("Authorization", "Bearer " + token);
    }
    return request.build();
  }

  /** The count in an answer; NaN when the service refused the question (a 4xx). */
  private static double read(HttpResponse<byte[]> response, String kind, String asked)
      throws Exception {
    int status = response.statusCode();
    if (status >= 500) {
      throw new IllegalStateException("HTTP " + status);
    }
    JsonNode answer = JSON.readTree(response.body());
    if (status != 200) {
      LOG.debug("lakestats: no answer for {}: {}", asked, answer.path("error"));
      return REFUSED;
    }
    JsonNode number = kind.equals("where")
        ? answer.path("estimates").path(0).path("row_count") : answer.path("distinct_count");
    if (!number.isNumber() || number.asDouble() < 0) {
      throw new IllegalStateException("an answer without a count");
    }
    return number.asDouble();
  }
}
