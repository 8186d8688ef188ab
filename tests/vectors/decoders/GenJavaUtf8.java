// Generates java-utf8-replacement.txt: hex bytes, then the UTF-16 code units of new String(bytes, UTF_8) (JDK 17),
// the decoding behind Kafka's StringDecoder and the string fields of generated message readers.
import java.nio.charset.StandardCharsets; import java.util.SplittableRandom;
public class GenJavaUtf8 { public static void main(String[] a) {
  int[] alpha = {0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xf8, 0xfe, 0xff};
  SplittableRandom r = new SplittableRandom(7);
  for (int n = 0; n < 1500; n++) { byte[] b = new byte[1 + r.nextInt(7)]; for (int i = 0; i < b.length; i++) b[i] = (byte) alpha[r.nextInt(alpha.length)];
    StringBuilder h = new StringBuilder(); for (byte x : b) h.append(String.format("%02x", x));
    String s = new String(b, StandardCharsets.UTF_8); StringBuilder o = new StringBuilder(); for (char c : s.toCharArray()) o.append(String.format("%04x", (int) c));
    System.out.println(h + " " + o); } } }
