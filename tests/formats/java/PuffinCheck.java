import java.io.File;
import java.nio.ByteBuffer;
import java.util.List;
import org.apache.iceberg.Files;
import org.apache.iceberg.puffin.BlobMetadata;
import org.apache.iceberg.puffin.Puffin;
import org.apache.iceberg.puffin.PuffinReader;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.shaded.org.apache.datasketches.common.Family;
import org.apache.iceberg.shaded.org.apache.datasketches.memory.Memory;
import org.apache.iceberg.shaded.org.apache.datasketches.theta.CompactSketch;
import org.apache.iceberg.shaded.org.apache.datasketches.theta.HashIterator;
import org.apache.iceberg.shaded.org.apache.datasketches.theta.Sketch;
import org.apache.iceberg.shaded.org.apache.datasketches.theta.UpdateSketch;

/** Reads a Puffin file with Iceberg's reader and DataSketches Java (both from Iceberg's Spark
 * runtime jar, `make jars`), or hashes values as Iceberg's ThetaSketchAgg does. */
public class PuffinCheck {
  public static void main(String[] args) throws Exception {
    if (args[0].equals("read")) {
      try (PuffinReader reader = Puffin.read(Files.localInput(new File(args[1]))).build()) {
        List<BlobMetadata> blobs = reader.fileMetadata().blobs();
        for (org.apache.iceberg.util.Pair<BlobMetadata, ByteBuffer> pair : reader.readAll(blobs)) {
          ByteBuffer buffer = pair.second();
          byte[] bytes = new byte[buffer.remaining()];
          buffer.get(bytes);
          Sketch sketch = CompactSketch.wrap(Memory.wrap(bytes));
          System.out.println(pair.first().inputFields().get(0) + " "
              + pair.first().properties().get("ndv") + " " + sketch.getLowerBound(2) + " "
              + sketch.getUpperBound(2) + " " + sketch.getRetainedEntries());
        }
      }
    } else {
      Type type = Types.fromPrimitiveString(args[1]);
      UpdateSketch sketch = UpdateSketch.builder().setFamily(Family.ALPHA).build();
      for (int i = 2; i < args.length; i++) {
        sketch.update(Conversions.toByteBuffer(type, Conversions.fromPartitionString(type, args[i])));
      }
      HashIterator it = sketch.compact().iterator();
      while (it.next()) {
        System.out.println(it.get());
      }
    }
  }
}
