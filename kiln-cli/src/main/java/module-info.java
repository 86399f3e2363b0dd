/** The kiln command-line tool. */
module dev.kiln.cli {
    requires dev.kiln.core;
    requires dev.kiln.onnx;
    requires dev.kiln.llm;
    requires info.picocli;

    opens dev.kiln.cli to info.picocli;
}
