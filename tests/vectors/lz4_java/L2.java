import net.jpountz.lz4.*;
import java.nio.file.*;
public class L2 { public static void main(String[] a) throws Exception {
  byte[] raw = Files.readAllBytes(Paths.get(a[0]));
  byte[] out = LZ4Factory.fastestInstance().fastCompressor().compress(raw);
  Files.write(Paths.get(a[1]), out);
}}
