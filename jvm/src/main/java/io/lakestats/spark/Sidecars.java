package io.lakestats.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.internal.SQLConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the statistics of one snapshot under a statistics root: {@code <root>/spark/} holds one
 * file per statistics version, {@code v<version>_<snapshot>.json}; the newest version written
 * for exactly the snapshot read wins. A version of another snapshot is never used (stale
 * statistics are not served as current): with none for the snapshot, the scan keeps Spark's
 * defaults. One listing per lookup; a file read once is kept (a version's file never changes:
 * lakestats writes it whole, under its final name only once complete).
 *
 * <p>A file that cannot be used as it is (larger than {@code spark.lakestats.maxFileBytes},
 * damaged, of another table, version or snapshot than its name and the scan say, or one whose
 * statistics Spark cannot take) is refused: the scan keeps Spark's own estimates and one warning
 * names the file and why, once per file (not once per query planned). Its size is checked from
 * the listing before a byte is read, and no more than the limit is ever read.
 */
final class Sidecars {
  static final String DIR = "spark";
  /** The largest statistics file read, in bytes (a bigger one is refused unread). */
  static final String MAX_BYTES = "spark.lakestats.maxFileBytes";
  static final long DEFAULT_MAX_BYTES = 64L << 20;
  private static final Logger LOG = LoggerFactory.getLogger(Sidecars.class);
  private static final Pattern NAME = Pattern.compile("v(\\d+)_(-?\\d+)\\.json");
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<String, SnapshotStatistics> READ = new ConcurrentHashMap<>();
  private static final Set<String> REFUSED = ConcurrentHashMap.newKeySet();

  private Sidecars() {}

  /** The statistics root of a table location: the setting's mapping, else {@code <location>/_lakestats}. */
  static String root(String location, Map<String, String> roots) {
    String trimmed = strip(location);
    for (Map.Entry<String, String> entry : roots.entrySet()) {
      if (strip(entry.getKey()).equals(trimmed)) {
        return entry.getValue();
      }
    }
    return trimmed + "/_lakestats";
  }

  /** ``file:/x``, ``file:///x`` and ``/x`` alike, without a trailing slash. */
  static String strip(String location) {
    String out = location;
    if (out.startsWith("file:///")) {
      out = out.substring("file://".length());
    } else if (out.startsWith("file:/")) {
      out = out.substring("file:".length());
    }
    while (out.length() > 1 && out.endsWith("/")) {
      out = out.substring(0, out.length() - 1);
    }
    return out;
  }

  /** A location as both sides may spell it: {@link #strip}, and S3's schemes as one. */
  static String sameLocation(String location) {
    String out = strip(location);
    for (String scheme : new String[] {"s3a://", "s3n://"}) {
      if (out.startsWith(scheme)) {
        out = "s3://" + out.substring(scheme.length());
      }
    }
    return out;
  }

  /**
   * The statistics of {@code snapshot} of the table at {@code location} under {@code root}, or
   * null: none written for it, or the file refused (see the class comment). A listing that
   * fails raises (the caller keeps the plan as it was).
   */
  static SnapshotStatistics find(String root, String location, String snapshot,
      Configuration conf) throws IOException {
    Path dir = new Path(root, DIR);
    FileSystem fs = dir.getFileSystem(conf);
    FileStatus[] files;
    try {
      files = fs.listStatus(dir);
    } catch (java.io.FileNotFoundException e) {
      return null;
    }
    long best = -1;
    FileStatus chosen = null;
    for (FileStatus file : files) {
      Matcher m = NAME.matcher(file.getPath().getName());
      if (m.matches() && m.group(2).equals(snapshot)) {
        long version = Long.parseLong(m.group(1));
        if (version > best) {
          best = version;
          chosen = file;
        }
      }
    }
    if (chosen == null) {
      return null;
    }
    // the size and time in the key: a file replaced under its name is read again
    String key = chosen.getPath() + "@" + chosen.getLen() + "@" + chosen.getModificationTime();
    if (REFUSED.contains(key)) {
      return null;
    }
    SnapshotStatistics known = READ.get(key);
    if (known != null) {
      return known;
    }
    long limit = limit();
    try {
      if (chosen.getLen() > limit) {
        throw new IllegalStateException(chosen.getLen() + " bytes, over the limit of " + limit
            + " (" + MAX_BYTES + ")");
      }
      byte[] bytes = readAtMost(fs, chosen.getPath(), limit);
      SnapshotStatistics read = new SnapshotStatistics(key, JSON.readTree(bytes), best,
          snapshot, sameLocation(location));
      READ.put(key, read);
      return read;
    } catch (Exception | LinkageError | StackOverflowError e) {
      refuse(key, chosen.getPath().toString(), e);
      return null;
    }
  }

  /**
   * What {@code use} makes of {@code stats}, or null when it fails (the file's statistics are
   * not what Spark can take for this scan): the file is refused from then on.
   */
  static <T> T use(SnapshotStatistics stats, Function<SnapshotStatistics, T> use) {
    try {
      return use.apply(stats);
    } catch (Exception | LinkageError | StackOverflowError e) {
      refuse(stats.key, stats.key.substring(0, stats.key.indexOf('@')), e);
      return null;
    }
  }

  private static void refuse(String key, String file, Throwable reason) {
    READ.remove(key);
    if (REFUSED.add(key)) {
      LOG.warn("lakestats: statistics file {} not used ({}); scans of its snapshot keep "
          + "Spark's own estimates", file, describe(reason));
    }
  }

  private static String describe(Throwable reason) {
    String message = reason.getMessage();
    String text = message == null || reason instanceof IllegalStateException
        ? (message == null ? reason.getClass().getSimpleName() : message)
        : reason.getClass().getSimpleName() + ": " + message;
    text = text.replaceAll("\\s+", " ");
    return text.length() > 300 ? text.substring(0, 300) + "..." : text;
  }

  /** The session's {@link #MAX_BYTES} (the default when unset or not a number). */
  private static long limit() {
    try {
      return Long.parseLong(SQLConf.get().getConfString(MAX_BYTES,
          Long.toString(DEFAULT_MAX_BYTES)).trim());
    } catch (NumberFormatException e) {
      return DEFAULT_MAX_BYTES;
    }
  }

  /** The file's bytes; more than {@code limit} (it grew since it was listed) is refused. */
  private static byte[] readAtMost(FileSystem fs, Path path, long limit) throws IOException {
    try (InputStream in = fs.open(path)) {
      byte[] bytes = in.readNBytes((int) Math.min(limit, Integer.MAX_VALUE - 8) + 1);
      if (bytes.length > limit) {
        throw new IllegalStateException("over the limit of " + limit + " bytes (" + MAX_BYTES
            + ")");
      }
      return bytes;
    }
  }
}
