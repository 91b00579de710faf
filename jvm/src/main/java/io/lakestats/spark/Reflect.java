package io.lakestats.spark;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/** Reflection on Scala case classes and on the formats' classes (not compiled against). */
final class Reflect {
  private Reflect() {}

  /** A no-argument method's result, found on the class or any superclass, accessible or not. */
  static Object call(Object target, String name) throws ReflectiveOperationException {
    for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
      try {
        Method method = c.getDeclaredMethod(name);
        method.setAccessible(true);
        return method.invoke(target);
      } catch (NoSuchMethodException e) {
        // look further up
      }
    }
    throw new NoSuchMethodException(target.getClass().getName() + "." + name + "()");
  }

  /**
   * {@code value.copy(field = replacement)} of a Scala case class: every other argument is its
   * current value ({@code copy$default$N}), so the call does not depend on how many fields a
   * given Spark version's class has.
   */
  static Object copyWith(Object value, String field, Object replacement)
      throws ReflectiveOperationException {
    Method copy = null;
    for (Method m : value.getClass().getMethods()) {
      if (m.getName().equals("copy")) {
        copy = m;
      }
    }
    if (copy == null) {
      throw new NoSuchMethodException(value.getClass().getName() + ".copy");
    }
    Object[] args = new Object[copy.getParameterCount()];
    int index = -1;
    for (int i = 0; i < args.length; i++) {
      args[i] = value.getClass().getMethod("copy$default$" + (i + 1)).invoke(value);
      if (fieldName(value, i).equals(field)) {
        index = i;
      }
    }
    if (index < 0) {
      throw new NoSuchFieldException(value.getClass().getName() + "." + field);
    }
    args[index] = replacement;
    try {
      return copy.invoke(value, args);
    } catch (InvocationTargetException e) {
      throw e;
    }
  }

  /**
   * The name of a case class's {@code i}-th field: {@code productElementName} (Scala 2.13), else
   * (Scala 2.12, Spark 3.5) the {@code i}-th final instance field: Scala 2.12 declares the
   * constructor's fields in order before the body's vals (lazy vals, declared first, are not
   * final).
   */
  private static String fieldName(Object value, int i) throws ReflectiveOperationException {
    try {
      return (String) value.getClass().getMethod("productElementName", int.class).invoke(value, i);
    } catch (NoSuchMethodException e) {
      int seen = 0;
      for (java.lang.reflect.Field field : value.getClass().getDeclaredFields()) {
        int modifiers = field.getModifiers();
        if (java.lang.reflect.Modifier.isFinal(modifiers)
            && !java.lang.reflect.Modifier.isStatic(modifiers) && seen++ == i) {
          return field.getName();
        }
      }
      throw e;
    }
  }
}
