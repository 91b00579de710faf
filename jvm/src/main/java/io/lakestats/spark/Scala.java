package io.lakestats.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Scala collections from Java in a way Scala 2.12 (Spark 3.5) and 2.13 (Spark 4) both compile
 * and run: their converters differ ({@code scala.jdk.javaapi} is 2.13's only), the methods used
 * here ({@code Map.empty}, {@code updated}, {@code iterator}) do not.
 */
final class Scala {
  private Scala() {}

  static <K, V> scala.collection.immutable.Map<K, V> map(Map<K, V> entries) {
    scala.collection.immutable.Map<K, V> out = scala.collection.immutable.Map$.MODULE$.empty();
    for (Map.Entry<K, V> entry : entries.entrySet()) {
      out = out.updated(entry.getKey(), entry.getValue());
    }
    return out;
  }

  static <A> List<A> list(scala.collection.Seq<A> seq) {
    List<A> out = new ArrayList<>();
    scala.collection.Iterator<A> it = seq.iterator();
    while (it.hasNext()) {
      out.add(it.next());
    }
    return out;
  }
}
