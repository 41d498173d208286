import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

/** Reads 4 KiB blocks of a file with positional reads (pread64), forever: a JVM for the profiler's
 *  tests (compiled by the test for Java 11, run on Java 11 and 17). */
public class PreadLoop {
    public static void main(String[] args) throws Exception {
        try (FileChannel channel = FileChannel.open(Paths.get(args[0]), StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(4096);
            System.out.println("reading");
            while (true) {
                for (int block = 0; block < 1000; block++) {
                    buffer.clear();
                    channel.read(buffer, (block % 16) * 4096L);
                }
                Thread.sleep(10);
            }
        }
    }
}
