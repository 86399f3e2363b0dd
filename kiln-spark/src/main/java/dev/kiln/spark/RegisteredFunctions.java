package dev.kiln.spark;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.ScalaUDF;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.ml.attribute.AttributeGroup;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The Kiln SQL functions registered in each session, and the analysis-time check of their calls that
 * {@link KilnSparkExtensions} installs: a call's argument count and types are checked (against the model's inputs, for
 * kiln_predict) when
 * the query is analysed (when {@code df.select(...)} or {@code spark.sql(...)} is called), before any task runs.
 */
final class RegisteredFunctions {
    /** What a call of one function must satisfy. */
    @FunctionalInterface
    interface CallCheck {
        /** @throws IllegalArgumentException naming the function, the argument and what it needed */
        void check(String name, List<Expression> args);
    }

    private static final Map<SparkSession, Map<String, CallCheck>> FUNCTIONS = Collections.synchronizedMap(new WeakHashMap<>());
    private static final Set<SparkSession> CHECKED = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

    private RegisteredFunctions() {}

    /** Registers a kiln_predict function: its arguments feed {@code sig}'s inputs. */
    static void registerPredict(SparkSession session, String name, ModelSignature sig) {
        register(session, name, (n, args) -> checkCall(n, args, sig));
    }

    /**
     * Registers a kiln_generate function: a string prompt, then optionally a struct of options whose fields
     * {@link GenerateOptions#checkType} accepts; a constant struct's values are checked too (over {@code defaults}), so a
     * literal {@code named_struct('temperature', -1)} fails here rather than in every task.
     */
    static void registerGenerate(SparkSession session, String name, GenerateOptions defaults) {
        register(session, name, (n, args) -> {
            if (args.size() != 1 && args.size() != 2) {
                throw new IllegalArgumentException(n + " takes 1 argument (the prompt) or 2 (the prompt and a struct of options); given " + args.size());
            }
            Expression a = args.getFirst();
            if (a.resolved() && !(a.dataType() instanceof StringType)) {
                throw new IllegalArgumentException(n + ", argument 1: the prompt must be a string, given " + label(a) + " of type " + a.dataType().simpleString());
            }
            if (args.size() == 2) {
                Expression o = args.get(1);
                if (!o.resolved()) return; // the analyser reports unresolved columns itself
                String where = n + ", argument 2 (options)";
                GenerateOptions.checkType(where, o.dataType());
                if (o.foldable()) {
                    // a constant: evaluated once here, as Spark's own constant folding would, and converted as the UDF receives it
                    Object row = CatalystTypeConverters.convertToScala(o.eval(null), o.dataType());
                    defaults.with(where, (Row) row);
                }
            }
        });
    }

    private static void register(SparkSession session, String name, CallCheck check) {
        FUNCTIONS.computeIfAbsent(session, s -> new ConcurrentHashMap<>()).put(name.toLowerCase(Locale.ROOT), check);
    }

    private static String label(Expression a) { return a instanceof NamedExpression n ? "column '" + n.name() + "'" : a.sql(); }

    /** Whether the session's analyser runs {@link #check} (KilnSparkExtensions was loaded when it was built). */
    static boolean checkedIn(SparkSession session) { return CHECKED.contains(session); }

    /** The check rule of {@code session}'s analyser. */
    static void installIn(SparkSession session) { CHECKED.add(session); }

    /**
     * Checks every call of a Kiln function in {@code plan}.
     *
     * @throws IllegalArgumentException naming the function, the argument and the model input on a mismatch
     */
    static void check(SparkSession session, LogicalPlan plan) {
        Map<String, CallCheck> fns = FUNCTIONS.get(session);
        if (fns == null || fns.isEmpty()) return;
        plan.foreach(node -> {
            node.expressions().foreach(e -> {
                e.foreach(x -> {
                    if (x instanceof ScalaUDF u && u.udfName().isDefined()) {
                        CallCheck c = fns.get(u.udfName().get().toLowerCase(Locale.ROOT));
                        if (c != null) c.check(u.udfName().get(), CollectionConverters.asJava(u.children()));
                    }
                    return BoxedUnit.UNIT;
                });
                return BoxedUnit.UNIT;
            });
            return BoxedUnit.UNIT;
        });
    }

    private static void checkCall(String name, List<Expression> args, ModelSignature sig) {
        if (args.size() != sig.inputs().size()) {
            throw new IllegalArgumentException(name + " takes " + sig.inputs().size() + " arguments, one per input " + sig.inputs() + " of model "
                    + sig.source() + "; given " + args.size());
        }
        for (int i = 0; i < args.size(); i++) {
            Expression a = args.get(i);
            if (!a.resolved()) return; // the analyser reports unresolved columns itself
            String label = a instanceof NamedExpression n ? n.name() : a.sql();
            int declared = a.dataType() instanceof VectorUDT && a instanceof NamedExpression n
                    ? AttributeGroup.fromStructField(new StructField(n.name(), a.dataType(), true, n.metadata())).size() : -1;
            try {
                InputColumn.check(label, a.dataType(), declared, sig.inputs().get(i), sig.source());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(name + ", argument " + (i + 1) + ": " + e.getMessage(), e);
            }
        }
    }
}
