package io.lakestats.spark;

import org.apache.spark.sql.connector.read.Scan;

/** What a scan wrapped by {@link ScanWrapper} adds: the original, and which version it reports. */
public interface LakestatsScan {
  Scan lakestatsOriginal();

  long lakestatsVersion();
}
