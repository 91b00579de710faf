package io.lakestats.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Finds the statistics of one snapshot under a statistics root: {@code <root>/spark/} holds one
 * file per statistics version, {@code v<version>_<snapshot>.json}; the newest version written
 * for exactly the snapshot read wins. A version of another snapshot is never used (stale
 * statistics are not served as current): with none for the snapshot, the scan keeps Spark's
 * defaults. One listing per lookup; a file read once is kept (a version's file never changes).
 */
final class Sidecars {
  static final String DIR = "spark";
  private static final Pattern NAME = Pattern.compile("v(\\d+)_(-?\\d+)\\.json");
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<String, SnapshotStatistics> READ = new ConcurrentHashMap<>();

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

  static SnapshotStatistics find(String root, String snapshot, Configuration conf) throws IOException {
    Path dir = new Path(root, DIR);
    FileSystem fs = dir.getFileSystem(conf);
    FileStatus[] files;
    try {
      files = fs.listStatus(dir);
    } catch (java.io.FileNotFoundException e) {
      return null;
    }
    long best = -1;
    Path bestPath = null;
    for (FileStatus file : files) {
      Matcher m = NAME.matcher(file.getPath().getName());
      if (m.matches() && m.group(2).equals(snapshot)) {
        long version = Long.parseLong(m.group(1));
        if (version > best) {
          best = version;
          bestPath = file.getPath();
        }
      }
    }
    if (bestPath == null) {
      return null;
    }
    String key = bestPath.toString();
    SnapshotStatistics known = READ.get(key);
    if (known != null) {
      return known;
    }
    try (InputStream in = fs.open(bestPath)) {
      SnapshotStatistics read = new SnapshotStatistics(root, JSON.readTree(in));
      if (!read.snapshot.equals(snapshot)) {
        return null; // a renamed file: its content decides
      }
      READ.put(key, read);
      return read;
    }
  }
}
